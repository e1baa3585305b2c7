package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/sandbox"
)

// filesEnv is a run environment whose service has a thread tree, with
// test tools that write into the thread's outputs folder on the host (as a
// sandbox would) and present paths (as present_files does).
type filesEnv struct {
	*runEnv
	tree sandbox.Tree
}

func newFilesEnv(t *testing.T) *filesEnv {
	t.Helper()
	f := &filesEnv{tree: sandbox.Tree{Root: t.TempDir()}}
	f.runEnv = newRunEnv(t, f.putTool(), f.presentTool(), f.linkTool())
	f.svc.UseFiles(f.tree)
	return f
}

// outputs is the thread's outputs folder on the host.
func (f *filesEnv) outputs(tenantID, threadID uuid.UUID) string {
	return filepath.Join(f.tree.Thread(tenantID, threadID).UserDataDir(), "outputs")
}

// write puts a file under the thread's outputs folder, outside any run.
func (f *filesEnv) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.outputs(f.access.Tenant.ID, f.thread.ID), rel)
	require.NoError(f.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(f.t, os.WriteFile(p, []byte(content), 0o644))
}

// put writes {path (relative to outputs), content}.
func (f *filesEnv) putTool() tools.Tool {
	return tools.Tool{
		Name: "put", Description: "Write a file under outputs.", Group: "test",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`),
		Run: func(_ context.Context, c tools.Call) (string, error) {
			var a struct{ Path, Content string }
			if err := json.Unmarshal(c.Arguments, &a); err != nil {
				return "", err
			}
			p := filepath.Join(f.outputs(c.TenantID, c.ThreadID), a.Path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			return "written", os.WriteFile(p, []byte(a.Content), 0o644)
		},
	}
}

// present declares {paths} like present_files.
func (f *filesEnv) presentTool() tools.Tool {
	return tools.Tool{
		Name: "present", Description: "Present files.", Group: "test",
		Parameters: json.RawMessage(`{"type":"object","properties":{"paths":{"type":"array"}},"required":["paths"],"additionalProperties":false}`),
		Run: func(ctx context.Context, c tools.Call) (string, error) {
			var a struct{ Paths []string }
			if err := json.Unmarshal(c.Arguments, &a); err != nil {
				return "", err
			}
			all, err := f.svc.PresentFiles(ctx, c.TenantID, c.ThreadID, c.RunID, a.Paths)
			if err != nil {
				return "", err
			}
			b, _ := json.Marshal(all)
			return string(b), nil
		},
	}
}

// link plants outputs/escape pointing at a file outside the tree.
func (f *filesEnv) linkTool() tools.Tool {
	return fnTool("link", func(_ context.Context, c tools.Call) (string, error) {
		outside := filepath.Join(f.tree.Root, "..", "outside-"+c.ThreadID.String())
		if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
			return "", err
		}
		dir := f.outputs(c.TenantID, c.ThreadID)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		return "linked", os.Symlink(outside, filepath.Join(dir, "escape"))
	})
}

func put(id, path, content string) llm.ToolCall {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return tc(id, "put", string(b))
}

func present(id string, paths ...string) llm.ToolCall {
	b, _ := json.Marshal(map[string]any{"paths": paths})
	return tc(id, "present", string(b))
}

const outputs = sandbox.Outputs + "/"

func TestSettlementRules(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		// before are files in outputs before the run (relative, content).
		before map[string]string
		// turns are the model's tool-call turns; a final answer follows.
		turns     [][]llm.ToolCall
		status    string
		err       string
		produced  []string
		presented []string
		matched   []string
		verdict   string
	}{{
		name: "nothing produced", status: agent.StatusSucceeded, verdict: agent.VerdictNothingProduced,
	}, {
		name:   "produced and presented exactly",
		turns:  [][]llm.ToolCall{{put("c1", "report.md", "# Report")}, {present("c2", outputs+"report.md")}},
		status: agent.StatusSucceeded, verdict: agent.VerdictDelivered,
		produced: []string{outputs + "report.md"}, presented: []string{outputs + "report.md"}, matched: []string{outputs + "report.md"},
	}, {
		name:   "produced under a presented folder",
		turns:  [][]llm.ToolCall{{put("c1", "charts/a.svg", "<svg/>"), put("c2", "charts/b.svg", "<svg/>")}, {present("c3", outputs+"charts")}},
		status: agent.StatusSucceeded, verdict: agent.VerdictDelivered,
		produced:  []string{outputs + "charts/a.svg", outputs + "charts/b.svg"},
		presented: []string{outputs + "charts"}, matched: []string{outputs + "charts/a.svg", outputs + "charts/b.svg"},
	}, {
		name:   "a folder prefix is not a folder",
		turns:  [][]llm.ToolCall{{put("c1", "charts-old/a.svg", "<svg/>")}, {present("c2", outputs+"charts")}},
		status: agent.StatusFailed, err: "artifact delivery incomplete", verdict: agent.VerdictIncomplete,
		produced: []string{outputs + "charts-old/a.svg"}, presented: []string{outputs + "charts"},
	}, {
		name:   "produced but not presented fails the run",
		turns:  [][]llm.ToolCall{{put("c1", "report.md", "# Report")}},
		status: agent.StatusFailed, err: "artifact delivery incomplete", verdict: agent.VerdictIncomplete,
		produced: []string{outputs + "report.md"},
	}, {
		name:   "one covered output is enough",
		turns:  [][]llm.ToolCall{{put("c1", "report.md", "# Report"), put("c2", "scratch.txt", "tmp")}, {present("c3", outputs+"report.md")}},
		status: agent.StatusSucceeded, verdict: agent.VerdictDelivered,
		produced:  []string{outputs + "report.md", outputs + "scratch.txt"},
		presented: []string{outputs + "report.md"}, matched: []string{outputs + "report.md"},
	}, {
		name:   "a modified file counts as produced",
		before: map[string]string{"data.csv": "a,b\n1,2\n"},
		turns:  [][]llm.ToolCall{{put("c1", "data.csv", "a,b\n3,4\n")}},
		status: agent.StatusFailed, err: "artifact delivery incomplete", verdict: agent.VerdictIncomplete,
		produced: []string{outputs + "data.csv"},
	}, {
		name:   "an untouched earlier file does not count",
		before: map[string]string{"old.txt": "from an earlier run", "keep/same.txt": "same"},
		turns:  [][]llm.ToolCall{{put("c1", "keep/same.txt", "same")}},
		status: agent.StatusSucceeded, verdict: agent.VerdictNothingProduced,
	}, {
		name:   "a symlink out of the tree is not followed",
		turns:  [][]llm.ToolCall{{tc("c1", "link", "{}")}},
		status: agent.StatusSucceeded, verdict: agent.VerdictNothingProduced,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newFilesEnv(t)
			for p, c := range tt.before {
				e.write(p, c)
			}
			for _, turn := range tt.turns {
				e.model.Enqueue(toolReply(turn...))
			}
			e.model.Enqueue(llmtest.Reply{Content: "done"})
			r := e.start("make something")
			require.Equal(t, tt.status, r.Status, r.Error)
			require.Equal(t, tt.err, r.Error)

			rc, err := e.svc.Receipt(t.Context(), e.access, r.ID)
			require.NoError(t, err)
			require.NotNil(t, rc)
			want := agent.Receipt{
				Produced: orEmpty(tt.produced), Presented: orEmpty(tt.presented), Matched: orEmpty(tt.matched),
				Verdict: tt.verdict, SettledAt: rc.SettledAt,
			}
			require.Equal(t, want, *rc)
			requireSettledBeforeCompleted(t, e.events(r.ID), *rc)
		})
	}
}

// requireSettledBeforeCompleted checks the run's one run.settled event
// carries the receipt and comes right before run.completed.
func requireSettledBeforeCompleted(t *testing.T, evs []agent.Event, rc agent.Receipt) {
	t.Helper()
	ts := types(evs)
	settled := slices.Index(ts, agent.EventRunSettled)
	require.NotEqual(t, -1, settled, "events: %v", ts)
	require.Equal(t, 1, count(ts, agent.EventRunSettled))
	require.Equal(t, agent.EventRunCompleted, ts[len(ts)-1])
	require.Equal(t, len(ts)-2, settled, "run.settled must come right before run.completed: %v", ts)
	var got agent.Receipt
	require.NoError(t, json.Unmarshal(evs[settled].Data, &got))
	rc.SettledAt = got.SettledAt
	require.Equal(t, rc, got)
	done := data(t, evs[len(ts)-1])
	require.Equal(t, evs[len(ts)-1].Type, agent.EventRunCompleted)
	require.NotEmpty(t, done["status"])
}

func TestSettlementPresentedAgainKeepsCoverage(t *testing.T) {
	t.Parallel()
	e := newFilesEnv(t)
	// The first run presents the report; the second rewrites and presents
	// it again, which keeps the first run's artifact row.
	e.model.Enqueue(toolReply(put("c1", "report.md", "v1")), toolReply(present("c2", outputs+"report.md")), llmtest.Reply{Content: "v1"})
	first := e.start("write v1")
	require.Equal(t, agent.StatusSucceeded, first.Status, first.Error)
	e.model.Enqueue(toolReply(put("c1", "report.md", "v2")), toolReply(present("c2", outputs+"report.md")), llmtest.Reply{Content: "v2"})
	second := e.start("write v2")
	require.Equal(t, agent.StatusSucceeded, second.Status, second.Error)

	rc, err := e.svc.Receipt(t.Context(), e.access, second.ID)
	require.NoError(t, err)
	require.Equal(t, agent.VerdictDelivered, rc.Verdict)
	require.Equal(t, []string{outputs + "report.md"}, rc.Presented)
	require.Equal(t, []string{outputs + "report.md"}, rc.Matched)

	arts, err := e.svc.Artifacts(t.Context(), e.access, e.thread.ID)
	require.NoError(t, err)
	require.Equal(t, []string{outputs + "report.md"}, arts)
}

func TestSettlementSnapshotTakenOncePerRun(t *testing.T) {
	t.Parallel()
	e := newFilesEnv(t)
	e.model.Enqueue(toolReply(put("c1", "report.md", "# Report")), llmtest.Reply{Content: "done"})
	r := e.start("write")
	require.Equal(t, agent.StatusFailed, r.Status)

	// One snapshot and one receipt per run, whatever retries happen.
	var snaps, receipts int
	pool := pgtest.Pool(t)
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM run_output_snapshots WHERE tenant_id = $1 AND run_id = $2`, r.TenantID, r.ID).Scan(&snaps))
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM run_settlements WHERE tenant_id = $1 AND run_id = $2`, r.TenantID, r.ID).Scan(&receipts))
	require.Equal(t, 1, snaps)
	require.Equal(t, 1, receipts)
	// A finished run is not executed again, so its receipt stays.
	require.NoError(t, e.svc.Execute(t.Context(), agent.RunArgs{TenantID: r.TenantID, RunID: r.ID}))
	rc, err := e.svc.Receipt(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, agent.VerdictIncomplete, rc.Verdict)
}

func TestSettlementWithoutFilesFindsNothing(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.Reply{Content: "hello"})
	r := e.start("hi")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	rc, err := e.svc.Receipt(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, agent.Receipt{Produced: []string{}, Presented: []string{}, Matched: []string{}, Verdict: agent.VerdictNothingProduced, SettledAt: rc.SettledAt}, *rc)
}

func TestReceiptBeforeSettlementIsNil(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	r, _, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, agent.CreateRunInput{Input: "queued"})
	require.NoError(t, err)
	rc, err := e.svc.Receipt(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Nil(t, rc)
	_, err = e.svc.Receipt(t.Context(), e.access, uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, agent.ErrNotFound)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}
