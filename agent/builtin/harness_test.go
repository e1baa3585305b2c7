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
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/builtin"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
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

type noSecrets struct{}

func (noSecrets) Reveal(context.Context, uuid.UUID, string) (string, error) {
	return "", &tenants.NotFoundError{Kind: "secret", Key: "any"}
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
	ctx := t.Context()
	pool := pgtest.Pool(t)
	logger := slog.New(slog.DiscardHandler)
	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	svc, err := agent.NewService(pool, agent.Config{LeaseTTL: 2 * time.Second}, noSecrets{}, logger)
	require.NoError(t, err)

	host := newProvider(t, kind)
	mgr, err := sandbox.NewManager(pool, host, sandbox.ManagerConfig{Owner: "test-worker"}, logger)
	require.NoError(t, err)
	src := builtin.New(mgr, svc, cfg)

	caps := policy.NewCapabilities(pool)
	require.NoError(t, svc.UseRuntime(agent.Runtime{
		Models:       llm.New(llm.Config{BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 2}),
		Tools:        tools.NewRegistry(src),
		Capabilities: caps,
		Principals:   tsvc,
		Owner:        "test-worker",
		Sandboxes:    mgr,
	}))
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	svc.UseQueue(queue)

	slug := "bt-" + pgtest.Suffix()
	tn, err := tsvc.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: slug, Name: slug})
	require.NoError(t, err)
	key, err := tsvc.CreateAPIKey(ctx, tenants.Access{Principal: policy.System, Tenant: tn}, tenants.CreateAPIKeyInput{Name: "dev", Role: policy.RoleDeveloper})
	require.NoError(t, err)
	p, err := tsvc.AuthenticateKey(ctx, key.Key)
	require.NoError(t, err)
	access := tenants.Access{Principal: p, Tenant: tn, Role: policy.RoleDeveloper}

	model := llmtest.Start(t)
	_, err = svc.CreateModel(ctx, tenants.Access{Principal: policy.System, Tenant: tn}, agent.ModelInput{
		Name: "scripted", BaseURL: model.URL(), Model: "scripted-1",
	})
	require.NoError(t, err)
	th, err := svc.CreateThread(ctx, access, "builtin")
	require.NoError(t, err)

	ts, err := src.Tools(ctx, tools.Scope{TenantID: tn.ID})
	require.NoError(t, err)
	byName := map[string]tools.Tool{}
	for _, tl := range ts {
		byName[tl.Name] = tl
	}
	return &env{t: t, svc: svc, sandbox: mgr, source: src, byName: byName, model: model, access: access, thread: th, provider: host}
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
