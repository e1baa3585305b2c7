package durability_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// fixture is one tenant on the package database with a developer API key,
// a model endpoint pointing at a scripted model served by this process, a
// thread, and an agent service (this process's worker) with the given tools.
type fixture struct {
	pool    *pgxpool.Pool
	logs    *syncBuffer
	logger  *slog.Logger
	tenants *tenants.Service
	svc     *agent.Service
	access  tenants.Access
	key     string // the API key's secret, for HTTP calls
	thread  agent.Thread
}

func newFixture(t *testing.T, model *llmtest.Server, owner string, ttl time.Duration, ts ...tools.Tool) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{pool: pgtest.Pool(t), logs: &syncBuffer{}}
	f.logger = slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("parent logs:\n%s", f.logs.String())
		}
	})
	var err error
	f.tenants, err = tenants.NewService(f.pool, tenants.Config{PasswordCost: 4}, f.logger)
	require.NoError(t, err)
	f.svc, err = newAgents(f.pool, f.tenants, f.logger, owner, ttl, ts...)
	require.NoError(t, err)

	slug := "dur-" + pgtest.Suffix()
	tn, err := f.tenants.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: slug, Name: slug})
	require.NoError(t, err)
	system := tenants.Access{Principal: policy.System, Tenant: tn}
	key, err := f.tenants.CreateAPIKey(ctx, system, tenants.CreateAPIKeyInput{Name: "dev", Role: policy.RoleDeveloper})
	require.NoError(t, err)
	p, err := f.tenants.AuthenticateKey(ctx, key.Key)
	require.NoError(t, err)
	f.key = key.Key
	f.access = tenants.Access{Principal: p, Tenant: tn, Role: policy.RoleDeveloper}
	_, err = f.svc.CreateModel(ctx, system, agent.ModelInput{Name: "scripted", BaseURL: model.URL(), Model: "scripted-1"})
	require.NoError(t, err)
	f.thread, err = f.svc.CreateThread(ctx, f.access, "durability")
	require.NoError(t, err)
	return f
}

// events returns all of a run's stored events.
func (f *fixture) events(t *testing.T, run agent.Run) []agent.Event {
	t.Helper()
	evs, err := f.svc.ListEvents(t.Context(), f.access, run.ID, 0, 1000)
	require.NoError(t, err)
	return evs
}

// requireContiguous checks that seqs run 1, 2, 3, … with no gap or repeat.
func requireContiguous(t *testing.T, evs []agent.Event) {
	t.Helper()
	for i, e := range evs {
		require.EqualValues(t, i+1, e.Seq, "event %d (%s) has seq %d", i, e.Type, e.Seq)
	}
}

func ofType(evs []agent.Event, typ string) []agent.Event {
	var out []agent.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}

// waitFor polls cond every 50ms until it holds, failing after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slowTool is the tool "slow" of the durability script, run by fn.
func slowTool(fn func(ctx context.Context) (string, error)) tools.Tool {
	return tools.Tool{
		Name: "slow", Description: "Takes a while.", Group: "durability",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Run:        func(ctx context.Context, _ tools.Call) (string, error) { return fn(ctx) },
	}
}

// noQueue accepts a run's job without storing one, so no worker in any
// process of the package takes it: the test executes the run itself.
type noQueue struct{}

func (noQueue) InsertTx(context.Context, pgx.Tx, river.JobArgs, *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return &rivertype.JobInsertResult{Job: &rivertype.JobRow{}}, nil
}

// checkLeaks fails the test if a goroutine it started outlives its
// cleanups (streams, River runtimes, child-process plumbing). Tests that
// call it do not run in parallel: goleak must not see another test's
// goroutines. The package's shared pool is opened first, as it outlives
// every test.
func checkLeaks(t *testing.T) {
	t.Helper()
	pgtest.Pool(t)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}
