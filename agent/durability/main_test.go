package durability_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/jobs"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// The environment a child process reads.
const (
	// envChild selects the child's role: childWorker or childAPI.
	envChild = "AGENTPLANE_DURABILITY_CHILD"
	// envDatabaseURL is the parent's test database (pgtest.URL).
	envDatabaseURL = "AGENTPLANE_DURABILITY_DATABASE_URL"

	childWorker = "worker"
	childAPI    = "api"
)

// Timing shared by parent and child workers.
const (
	leaseTTL  = 2 * time.Second
	reapEvery = 500 * time.Millisecond
)

// TestMain runs the tests, or, in a child process, a worker or an API
// server until its stdin closes or it is killed. A child never touches
// pgtest: the parent owns (and drops) the database.
func TestMain(m *testing.M) {
	switch role := os.Getenv(envChild); role {
	case "":
		pgtest.Main(m)
	case childWorker:
		os.Exit(runChild(workerChild))
	case childAPI:
		os.Exit(runChild(apiChild))
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want %q or %q\n", envChild, role, childWorker, childAPI)
		os.Exit(2)
	}
}

// runChild runs serve until the parent closes our stdin (or dies, which
// closes it too) and returns the exit code. serve prints one line on
// stdout once it is ready.
func runChild(serve func(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	pool, err := pg.Open(ctx, os.Getenv(envDatabaseURL))
	if err != nil {
		logger.Error("child: open database", slog.String("error", err.Error()))
		return 1
	}
	defer pool.Close()
	if err := serve(ctx, pool, logger); err != nil {
		logger.Error("child failed", slog.String("error", err.Error()))
		return 1
	}
	return 0
}

// workerChild is a worker process as cmd/agentplane wires one: the product's
// job runtime with the run worker and the periodic reaper. Its only tool,
// "slow", blocks until the run's context ends, so a run that called it is
// mid-step when the parent kills this process.
func workerChild(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	if err != nil {
		return err
	}
	svc, err := newAgents(pool, tsvc, logger, fmt.Sprintf("child-worker:%d", os.Getpid()), leaseTTL, slowTool(func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if err != nil {
		return err
	}
	rt, err := jobs.New(pool, jobs.Config{Work: true, Workers: 4, ReapEvery: reapEvery, StopTimeout: time.Second},
		jobs.Services{Tenants: tsvc, Agents: svc}, logger)
	if err != nil {
		return err
	}
	svc.UseQueue(rt.Client)
	if err := rt.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	return rt.Stop(context.WithoutCancel(ctx))
}

// apiChild is an API replica: the product's HTTP surface with its own
// event broker on a free local port, printed as "listening <addr>".
func apiChild(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	if err != nil {
		return err
	}
	enf, err := policy.NewEnforcer()
	if err != nil {
		return err
	}
	svc, err := agent.NewService(pool, agent.Config{}, noSecrets{}, logger)
	if err != nil {
		return err
	}
	broker := agent.NewBroker(pool, logger)
	bctx, stopBroker := context.WithCancel(ctx)
	defer func() {
		stopBroker()
		broker.Wait()
	}()
	if err := broker.Start(bctx); err != nil {
		return err
	}
	if err := awaitListening(ctx, pool, broker); err != nil {
		return err
	}
	srv := api.New(api.Deps{
		Tenants: tsvc, Enforcer: enf, Pool: pool, Logger: logger,
		Agents: svc, Broker: broker, Capabilities: policy.NewCapabilities(pool),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// awaitListening returns once the broker's LISTEN is live, proven by a
// notification for a probe run reaching a subscriber. Before that, a
// notification would be lost and a stream would only catch up on its next
// keepalive poll.
func awaitListening(ctx context.Context, pool *pgxpool.Pool, b *agent.Broker) error {
	probe := uuid.New()
	wake, unsubscribe := b.Subscribe(probe)
	defer unsubscribe()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		payload := uuid.Nil.String() + ":" + probe.String() + ":0"
		if _, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, agent.NotifyChannel, payload); err != nil {
			return fmt.Errorf("probe notify: %w", err)
		}
		select {
		case <-wake:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("event broker did not start listening: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// newAgents builds an agent service with a runtime, as cmd/agentplane does.
func newAgents(pool *pgxpool.Pool, tsvc *tenants.Service, logger *slog.Logger, owner string, ttl time.Duration, ts ...tools.Tool) (*agent.Service, error) {
	svc, err := agent.NewService(pool, agent.Config{LeaseTTL: ttl}, noSecrets{}, logger)
	if err != nil {
		return nil, err
	}
	err = svc.UseRuntime(agent.Runtime{
		Models:       llm.New(llm.Config{BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 2}),
		Tools:        tools.NewRegistry(tools.Static{SourceName: "durability", List: ts}),
		Capabilities: policy.NewCapabilities(pool),
		Principals:   tsvc,
		Owner:        owner,
	})
	if err != nil {
		return nil, err
	}
	return svc, nil
}

type noSecrets struct{}

func (noSecrets) Reveal(context.Context, uuid.UUID, string) (string, error) {
	return "", &tenants.NotFoundError{Kind: "secret", Key: "any"}
}
