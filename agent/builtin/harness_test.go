package builtin_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/agenttest"
	"github.com/agentplane/agentplane/agent/builtin"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
)

// env is one tenant and thread with the builtin source over a real host
// provider (on a temporary tree) and a real sandbox manager, wired into an
// agent service whose runs are executed by calling Execute directly.
type env struct {
	t        *testing.T
	svc      *agent.Service
	sandbox  *sandbox.Manager
	source   *builtin.Source
	byName   map[string]tools.Tool
	model    *llmtest.Server
	access   tenants.Access
	thread   agent.Thread
	run      agent.Run // a queued run on thread, for direct tool calls
	provider sandbox.Provider
}

// Providers the tests run on.
const (
	onHost  = "host"
	onBwrap = "bwrap"
)

func newEnv(t *testing.T, cfg builtin.Config) *env {
	t.Helper()
	return newEnvOn(t, cfg, onHost)
}

// newProvider builds a real provider: host on a temporary tree, or
// bubblewrap (skipped where it is not installed, required in CI).
func newProvider(t *testing.T, kind string) sandbox.Provider {
	t.Helper()
	limits := sandbox.Limits{WallTime: 20 * time.Second}
	if kind == onHost {
		host, err := sandbox.NewHost(sandbox.Tree{Root: t.TempDir()}, limits, true)
		require.NoError(t, err)
		return host
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bwrap is required in CI: %v", err)
		}
		t.Skipf("bwrap not installed: %v", err)
	}
	// t.TempDir's parent is private; the sandbox identity must reach the tree.
	dir, err := os.MkdirTemp("", "agentplane-builtin-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := sandbox.NewBwrap(sandbox.BwrapConfig{Tree: sandbox.Tree{Root: filepath.Join(dir, "data")}, Limits: limits})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Stop(context.WithoutCancel(t.Context()))) })
	return b
}

func newEnvOn(t *testing.T, cfg builtin.Config, kind string) *env {
	t.Helper()
	pool := pgtest.Pool(t)
	host := newProvider(t, kind)
	mgr, err := sandbox.NewManager(pool, host, sandbox.ManagerConfig{Owner: "test-worker"}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	var src *builtin.Source
	ae := agenttest.New(t, pool, agenttest.Options{
		Secrets:   agenttest.NoSecrets{},
		Sandboxes: mgr,
		Registry: func(svc *agent.Service) *tools.Registry {
			src = builtin.New(mgr, svc, cfg)
			return tools.NewRegistry(src)
		},
	})

	ts, err := src.Tools(t.Context(), tools.Scope{TenantID: ae.Access.Tenant.ID})
	require.NoError(t, err)
	byName := map[string]tools.Tool{}
	for _, tl := range ts {
		byName[tl.Name] = tl
	}
	return &env{t: t, svc: ae.Service, sandbox: mgr, source: src, byName: byName, model: ae.Model, access: ae.Access, thread: ae.Thread, provider: host}
}

// call runs one tool directly, as the loop would after its gates,
// checking the arguments against the schema first.
func (e *env) call(name string, args any) (string, error) {
	e.t.Helper()
	tl, ok := e.byName[name]
	require.True(e.t, ok, "no tool %s", name)
	raw, err := json.Marshal(args)
	require.NoError(e.t, err)
	checked, err := tools.CheckArguments(tl, string(raw))
	if err != nil {
		return "", err
	}
	return tl.Run(e.t.Context(), tools.Call{
		TenantID: e.access.Tenant.ID, ThreadID: e.thread.ID, RunID: e.runID(),
		Principal: e.access.Principal, CallID: "call-" + pgtest.Suffix(), Arguments: checked,
	})
}

// ok is call that must succeed.
func (e *env) ok(name string, args any) string {
	e.t.Helper()
	out, err := e.call(name, args)
	require.NoError(e.t, err, "%s %v", name, args)
	return out
}

// runID is a run on the thread for present_files to record against; it
// is created (queued, never executed) on first need.
func (e *env) runID() uuid.UUID {
	e.t.Helper()
	if e.run.ID == uuid.Nil {
		r, _, err := e.svc.CreateRun(e.t.Context(), e.access, e.thread.ID, agent.CreateRunInput{Input: "direct tool calls"})
		require.NoError(e.t, err)
		e.run = r
	}
	return e.run.ID
}

func (e *env) artifacts() []string {
	e.t.Helper()
	all, err := e.svc.Artifacts(e.t.Context(), e.access, e.thread.ID)
	require.NoError(e.t, err)
	return all
}

type m = map[string]any
