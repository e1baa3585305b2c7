package agenttest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
)

// Options varies the environment [New] builds; the zero value is one
// tenant, no tools and a 2s lease.
type Options struct {
	// Tools are served by one static source named "test".
	Tools []tools.Tool
	// Registry, when set, replaces Tools: it builds the registry from the
	// new service, for sources that call back into it.
	Registry func(svc *agent.Service) *tools.Registry
	// LeaseTTL defaults to 2s (a heartbeat every ~0.67s); negative means
	// the agent package's own default.
	LeaseTTL time.Duration
	// MaxInputBytes zero means the agent package's default.
	MaxInputBytes int
	// Secrets is the service's secret reader; nil means none configured.
	Secrets agent.SecretReader
	// Sandboxes, when set, releases a thread's sandbox at run end.
	Sandboxes agent.SandboxReleaser
	// Files, when set, is the host tree of threads' user-data (UseFiles).
	Files *sandbox.Tree
	// Broker starts an event broker on the pool (Env.Broker).
	Broker bool
	// Owner names the worker in run leases; default "test-worker".
	Owner string
	// NoTenant skips the tenant, principal, model and thread; the caller
	// creates tenants and gives them the model with [Env.UseModel].
	NoTenant bool
}

// Env is what [New] built. Access, Thread are zero with NoTenant; Broker
// is nil unless asked for.
type Env struct {
	t       *testing.T
	Pool    *pgxpool.Pool
	Service *agent.Service
	Tenants *tenants.Service
	Caps    *policy.Capabilities
	Model   *llmtest.Server
	Queue   *river.Client[pgx.Tx]
	Broker  *agent.Broker
	// Access is a developer API-key principal of the tenant.
	Access tenants.Access
	Thread agent.Thread
}

// NoSecrets is a secret reader that holds no secret.
type NoSecrets struct{}

// Reveal always answers not found.
func (NoSecrets) Reveal(context.Context, uuid.UUID, string) (string, error) {
	return "", &tenants.NotFoundError{Kind: "secret", Key: "any"}
}

// New builds the environment on pool (the calling package's pgtest.Pool).
func New(t *testing.T, pool *pgxpool.Pool, o Options) *Env {
	t.Helper()
	o = o.withDefaults()
	logger := slog.New(slog.DiscardHandler)
	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	svc, err := agent.NewService(pool, agent.Config{LeaseTTL: o.LeaseTTL, MaxInputBytes: o.MaxInputBytes}, o.Secrets, logger)
	require.NoError(t, err)
	if o.Files != nil {
		svc.UseFiles(*o.Files)
	}
	reg := tools.NewRegistry(tools.Static{SourceName: "test", List: o.Tools})
	if o.Registry != nil {
		reg = o.Registry(svc)
	}
	caps := policy.NewCapabilities(pool)
	require.NoError(t, svc.UseRuntime(agent.Runtime{
		Models:       llm.New(llm.Config{BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 2}),
		Tools:        reg,
		Capabilities: caps,
		Principals:   tsvc,
		Owner:        o.Owner,
		Sandboxes:    o.Sandboxes,
	}))
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	svc.UseQueue(queue)
	e := &Env{t: t, Pool: pool, Service: svc, Tenants: tsvc, Caps: caps, Model: llmtest.Start(t), Queue: queue}
	if o.Broker {
		e.Broker = agent.NewBroker(pool, logger)
		require.NoError(t, e.Broker.Start(t.Context()))
		t.Cleanup(e.Broker.Wait)
	}
	if !o.NoTenant {
		e.addTenant()
	}
	return e
}

func (o Options) withDefaults() Options {
	switch {
	case o.LeaseTTL == 0:
		o.LeaseTTL = 2 * time.Second
	case o.LeaseTTL < 0:
		o.LeaseTTL = 0
	}
	if o.Owner == "" {
		o.Owner = "test-worker"
	}
	return o
}

// addTenant creates the tenant, its developer key principal, its default
// model and a thread titled "test".
func (e *Env) addTenant() {
	e.t.Helper()
	ctx := e.t.Context()
	slug := "run-" + pgtest.Suffix()
	tn, err := e.Tenants.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: slug, Name: slug})
	require.NoError(e.t, err)
	key, err := e.Tenants.CreateAPIKey(ctx, SystemAccess(tn), tenants.CreateAPIKeyInput{Name: "dev", Role: policy.RoleDeveloper})
	require.NoError(e.t, err)
	p, err := e.Tenants.AuthenticateKey(ctx, key.Key)
	require.NoError(e.t, err)
	e.Access = tenants.Access{Principal: p, Tenant: tn, Role: policy.RoleDeveloper}
	e.UseModel(tn)
	e.Thread, err = e.Service.CreateThread(ctx, e.Access, "test")
	require.NoError(e.t, err)
}

// UseModel makes the scripted model tn's default model endpoint.
func (e *Env) UseModel(tn tenants.Tenant) {
	e.t.Helper()
	_, err := e.Service.CreateModel(e.t.Context(), SystemAccess(tn), agent.ModelInput{
		Name: "scripted", BaseURL: e.Model.URL(), Model: "scripted-1",
	})
	require.NoError(e.t, err)
}

// SystemAccess acts in tn as the platform (for definitions and policy).
func SystemAccess(tn tenants.Tenant) tenants.Access {
	return tenants.Access{Principal: policy.System, Tenant: tn}
}

// System acts in the env's tenant as the platform.
func (e *Env) System() tenants.Access { return SystemAccess(e.Access.Tenant) }

// Create creates a run on the env's thread without executing it.
func (e *Env) Create(in agent.CreateRunInput) agent.Run {
	e.t.Helper()
	r, created, err := e.Service.CreateRun(e.t.Context(), e.Access, e.Thread.ID, in)
	require.NoError(e.t, err)
	require.True(e.t, created)
	return r
}

// Exec executes a run of the env's tenant to its end, as a worker would.
func (e *Env) Exec(id uuid.UUID) error {
	return e.Service.Execute(e.t.Context(), agent.RunArgs{TenantID: e.Access.Tenant.ID, RunID: id})
}

// Get reads a run of the env's tenant.
func (e *Env) Get(id uuid.UUID) agent.Run {
	e.t.Helper()
	r, err := e.Service.GetRun(e.t.Context(), e.Access, id)
	require.NoError(e.t, err)
	return r
}

// Start creates a run on the env's thread and executes it to the end.
func (e *Env) Start(in agent.CreateRunInput) agent.Run {
	e.t.Helper()
	r := e.Create(in)
	require.NoError(e.t, e.Exec(r.ID))
	return e.Get(r.ID)
}

// Events lists a run's events (up to 1000).
func (e *Env) Events(run uuid.UUID) []agent.Event {
	e.t.Helper()
	evs, err := e.Service.ListEvents(e.t.Context(), e.Access, run, 0, 1000)
	require.NoError(e.t, err)
	return evs
}
