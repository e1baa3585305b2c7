package builtin_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/builtin"
	"github.com/agentplane/agentplane/internal/pgtest"
)

func pool(t *testing.T) *pgxpool.Pool { return pgtest.Pool(t) }

func TestPresentFilesValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	e.ok("write_file", m{"path": "/mnt/user-data/outputs/a.txt", "content": "a"})
	e.ok("write_file", m{"path": "/mnt/user-data/workspace/w.txt", "content": "w"})

	for _, tt := range []struct {
		paths []string
		want  string
	}{
		{[]string{"/mnt/user-data/workspace/w.txt"}, "is not under /mnt/user-data/outputs"},
		{[]string{"w.txt"}, "is not under /mnt/user-data/outputs"},
		{[]string{"/etc/passwd"}, "is not a sandbox path"},
		{[]string{"outputs/../workspace/w.txt"}, "is not under /mnt/user-data/outputs"},
		{[]string{"/mnt/user-data/outputs"}, "is not under /mnt/user-data/outputs"},
		{[]string{"outputs/missing.txt"}, "/mnt/user-data/outputs/missing.txt does not exist"},
		// All or nothing: a valid path next to a bad one is not recorded.
		{[]string{"outputs/a.txt", "outputs/missing.txt"}, "does not exist"},
		{[]string{"outputs/a.txt", "/mnt/skills/x"}, "is not under"},
		{[]string{}, "at least one"},
	} {
		_, err := e.call("present_files", m{"paths": tt.paths})
		require.ErrorContains(t, err, tt.want, "%v", tt.paths)
		require.ErrorContains(t, err, "nothing presented", "%v", tt.paths)
	}
	require.Empty(t, e.artifacts(), "no refused call recorded anything")
	_, err := e.call("present_files", m{"paths": "outputs/a.txt"})
	require.ErrorContains(t, err, `argument "paths" must be of type array`)
	_, err = e.call("present_files", m{"paths": []any{1}})
	require.Error(t, err)
}

func TestPresentFilesDedupesInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	for _, p := range []string{"a.txt", "b.txt", "c.txt", "dir/d.txt"} {
		e.ok("write_file", m{"path": "/mnt/user-data/outputs/" + p, "content": p})
	}
	o := "/mnt/user-data/outputs/"
	out := e.ok("present_files", m{"paths": []string{"outputs/b.txt", o + "a.txt", "outputs/./b.txt"}})
	require.Equal(t, "presented 2 path(s). The thread's artifacts, in order:\n"+o+"b.txt\n"+o+"a.txt", out)
	e.ok("present_files", m{"paths": []string{o + "a.txt", "../outputs/c.txt", "outputs/dir"}})
	require.Equal(t, []string{o + "b.txt", o + "a.txt", o + "c.txt", o + "dir"}, e.artifacts())

	// Each call is an artifact.presented event on the run.
	evs, err := e.svc.ListEvents(t.Context(), e.access, e.run.ID, 0, 100)
	require.NoError(t, err)
	var presented []agent.Event
	for _, ev := range evs {
		if ev.Type == agent.EventArtifactPresented {
			presented = append(presented, ev)
		}
	}
	require.Len(t, presented, 2)
	require.JSONEq(t, `{"paths":["`+o+`a.txt","`+o+`c.txt","`+o+`dir"],"added":["`+o+`c.txt","`+o+`dir"],
		"artifacts":["`+o+`b.txt","`+o+`a.txt","`+o+`c.txt","`+o+`dir"]}`, string(presented[1].Data))
}

func TestArtifactsAreTenantScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	other := newEnv(t, builtin.Config{})
	e.ok("write_file", m{"path": "outputs/x.txt", "content": "x"})
	_, err := e.call("write_file", m{"path": "/mnt/user-data/outputs/x.txt", "content": "x"})
	require.NoError(t, err)
	e.ok("present_files", m{"paths": []string{"outputs/x.txt"}})
	_, err = other.svc.Artifacts(t.Context(), other.access, e.thread.ID)
	require.ErrorIs(t, err, agent.ErrNotFound)
	// Presenting into another tenant's thread is refused by the service.
	_, err = e.svc.PresentFiles(t.Context(), other.access.Tenant.ID, e.thread.ID, e.run.ID, []string{"/mnt/user-data/outputs/x.txt"})
	require.ErrorIs(t, err, agent.ErrNotFound)
	_, err = e.svc.PresentFiles(t.Context(), e.access.Tenant.ID, e.thread.ID, e.run.ID, []string{"/mnt/user-data/workspace/x.txt"})
	require.ErrorIs(t, err, agent.ErrInvalidInput)
}
