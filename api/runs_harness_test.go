package api_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// wireRuns gives the harness's agent service an insert-only job queue (no
// worker competes for run jobs; tests execute runs with h.execute) and a
// runtime whose model is a scripted server with the demo behaviour.
func wireRuns(t *testing.T, pool *pgxpool.Pool, agents *agent.Service, svc *tenants.Service) *llmtest.Server {
	t.Helper()
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	agents.UseQueue(queue)
	model := llmtest.Start(t)
	require.NoError(t, agents.UseRuntime(agent.Runtime{
		Models:       llm.New(llm.Config{MaxRetries: -1}),
		Tools:        tools.NewRegistry(),
		Capabilities: policy.NewCapabilities(pool),
		Principals:   svc,
		Owner:        "api-test",
	}))
	return model
}

// useScriptedModel registers the harness's scripted model as the tenant's default.
func (h *harness) useScriptedModel(t *testing.T, slug, token string) {
	t.Helper()
	h.ok(t, 201, "POST", "/v1/tenants/"+slug+"/models", token, map[string]any{
		"name": "scripted", "base_url": h.model.URL(), "model": "scripted-1", "default": true,
	})
}

// startBroker listens for run events for the test's lifetime.
func startBroker(t *testing.T, pool *pgxpool.Pool) *agent.Broker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := agent.NewBroker(pool, slog.New(slog.DiscardHandler))
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() { cancel(); b.Wait() })
	return b
}
