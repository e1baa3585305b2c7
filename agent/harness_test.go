package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// runEnv is one tenant with a scripted model, an agent service whose runs
// are executed by calling Execute directly (no River worker competes for
// the jobs), and an in-process tool registry.
type runEnv struct {
	t       *testing.T
	svc     *agent.Service
	tenants *tenants.Service
	caps    *policy.Capabilities
	model   *llmtest.Server
	access  tenants.Access
	thread  agent.Thread
	queue   *river.Client[pgx.Tx]
}

type noSecrets struct{}

func (noSecrets) Reveal(context.Context, uuid.UUID, string) (string, error) {
	return "", &tenants.NotFoundError{Kind: "secret", Key: "any"}
}

func newRunEnv(t *testing.T, ts ...tools.Tool) *runEnv {
	t.Helper()
	ctx := t.Context()
	pool := pgtest.Pool(t)
	logger := slog.New(slog.DiscardHandler)
	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	svc, err := agent.NewService(pool, agent.Config{LeaseTTL: 2 * time.Second}, noSecrets{}, logger)
	require.NoError(t, err)
	caps := policy.NewCapabilities(pool)
	require.NoError(t, svc.UseRuntime(agent.Runtime{
		Models:       llm.New(llm.Config{BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 2}),
		Tools:        tools.NewRegistry(tools.Static{SourceName: "test", List: ts}),
		Capabilities: caps,
		Principals:   tsvc,
		Owner:        "test-worker",
	}))
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	svc.UseQueue(queue)

	slug := "run-" + pgtest.Suffix()
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
	th, err := svc.CreateThread(ctx, access, "test")
	require.NoError(t, err)
	return &runEnv{t: t, svc: svc, tenants: tsvc, caps: caps, model: model, access: access, thread: th, queue: queue}
}

// start creates a run and executes it to the end, as a worker would.
func (e *runEnv) start(input string) agent.Run {
	e.t.Helper()
	r, created, err := e.svc.CreateRun(e.t.Context(), e.access, e.thread.ID, agent.CreateRunInput{Input: input})
	require.NoError(e.t, err)
	require.True(e.t, created)
	require.NoError(e.t, e.svc.Execute(e.t.Context(), agent.RunArgs{TenantID: r.TenantID, RunID: r.ID}))
	got, err := e.svc.GetRun(e.t.Context(), e.access, r.ID)
	require.NoError(e.t, err)
	return got
}

func (e *runEnv) events(run uuid.UUID) []agent.Event {
	e.t.Helper()
	evs, err := e.svc.ListEvents(e.t.Context(), e.access, run, 0, 1000)
	require.NoError(e.t, err)
	return evs
}

func types(evs []agent.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func data(t *testing.T, e agent.Event) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &m))
	return m
}

// echoTool returns its "text" argument.
func echoTool() tools.Tool {
	return tools.Tool{
		Name: "echo", Description: "Echo the text back.", Group: "test",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		Run: func(_ context.Context, c tools.Call) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(c.Arguments, &a); err != nil {
				return "", err
			}
			return "echo: " + a.Text, nil
		},
	}
}
