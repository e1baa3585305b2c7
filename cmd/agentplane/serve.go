package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/internal/devpg"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/jobs"
	"github.com/agentplane/agentplane/migrations"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// app is everything serve wires together, kept for an orderly shutdown.
type app struct {
	cfg          config
	logger       *slog.Logger
	pool         *pgxpool.Pool
	redis        *redis.Client
	tenants      *tenants.Service
	runtime      *jobs.Runtime
	http         *http.Server
	vault        *secrets.Vault
	agents       *agent.Service
	broker       *agent.Broker
	capabilities *policy.Capabilities
	cluster      *devpg.Cluster
	sandboxes    *sandbox.Manager
	stopProvider func(context.Context) error
}

func serve(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseConfig(args)
	if err != nil {
		return err
	}
	a := &app{cfg: cfg, logger: cfg.logger()}
	defer a.close()
	if err := a.openDatabase(ctx); err != nil {
		return err
	}
	if err := a.build(ctx); err != nil {
		return err
	}
	if cfg.Dev {
		if err := a.seedDemo(ctx, stdout); err != nil {
			return err
		}
	}
	return a.run(ctx)
}

// openDatabase connects (in dev mode starting a private cluster when no
// server answers), creates the database when missing, and migrates.
func (a *app) openDatabase(ctx context.Context) error {
	if a.cfg.Dev {
		if err := a.devDatabase(ctx); err != nil {
			return err
		}
	}
	if a.cfg.Dev || a.cfg.DatabaseURL == defaultDatabaseURL {
		if err := pg.EnsureDatabase(ctx, a.cfg.DatabaseURL); err != nil {
			return fmt.Errorf("AGENTPLANE_DATABASE_URL: %w", err)
		}
	}
	// Room for every job worker plus the HTTP side and River's own needs.
	pool, err := pg.OpenSized(ctx, a.cfg.DatabaseURL, int32(a.cfg.Workers)+8)
	if err != nil {
		return fmt.Errorf("AGENTPLANE_DATABASE_URL: %w", err)
	}
	a.pool = pool
	if a.cfg.Migrate {
		if err := migrations.Apply(ctx, pool, a.logger); err != nil {
			return err
		}
	}
	return nil
}

// devDatabase uses the local server when it answers, else a private one.
func (a *app) devDatabase(ctx context.Context) error {
	if a.cfg.DatabaseURL != defaultDatabaseURL || devpg.Answers("127.0.0.1:5432") {
		return nil
	}
	a.logger.Warn("no PostgreSQL at 127.0.0.1:5432; starting a private cluster", slog.String("data_dir", a.cfg.DataDir))
	c, err := devpg.Start(ctx, a.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("dev database: %w", err)
	}
	a.cluster = c
	a.cfg.DatabaseURL = c.URL
	return nil
}

// build creates the services, the job runtime and the HTTP server.
func (a *app) build(ctx context.Context) error {
	if err := a.connectRedis(ctx); err != nil {
		return err
	}
	enforcer, err := policy.NewEnforcer()
	if err != nil {
		return err
	}
	a.tenants, err = tenants.NewService(a.pool, tenants.Config{KeyCacheTTL: a.cfg.KeyCacheTTL}, a.logger)
	if err != nil {
		return err
	}
	if err := a.buildAgents(ctx); err != nil {
		return err
	}
	a.runtime, err = jobs.New(a.pool, jobs.Config{
		Workers: a.cfg.Workers, Work: a.cfg.Role != "api", StopTimeout: a.cfg.StopTimeout,
	}, jobs.Services{Tenants: a.tenants, Agents: a.agents, Sandboxes: a.sandboxes}, a.logger)
	if err != nil {
		return err
	}
	a.agents.UseQueue(a.runtime.Client)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	deps := api.Deps{
		Tenants: a.tenants, Enforcer: enforcer, Pool: a.pool, Logger: a.logger,
		AdminToken: a.cfg.AdminToken, Registry: reg,
		Ready:  func(ctx context.Context) error { return migrations.Check(ctx, a.pool) },
		Agents: a.agents, Broker: a.broker, Capabilities: a.capabilities, Secrets: a.vault,
	}
	handler, err := a.handler(ctx, deps, enforcer)
	if err != nil {
		return err
	}
	a.http = &http.Server{Addr: a.cfg.HTTPAddr, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	return nil
}

// handler is the full surface for api/all roles and only ops for workers.
func (a *app) handler(ctx context.Context, deps api.Deps, enforcer *policy.Enforcer) (http.Handler, error) {
	if a.cfg.Role == "worker" {
		return api.OpsHandler(deps), nil
	}
	srv := api.New(deps)
	ui, err := jobs.NewUI(ctx, a.runtime, a.logger)
	if err != nil {
		return nil, err
	}
	srv.Mount(jobs.UIPrefix, srv.PlatformOnly(ui))
	if a.cfg.Dev {
		fake := llmtest.NewServer()
		for _, r := range llmtest.DemoRules() {
			fake.AddRule(r)
		}
		fake.DisableRecording()
		srv.Mount(devModelPrefix, http.StripPrefix(devModelPrefix, fake.Handler()))
	}
	if err := a.mountConsole(srv, enforcer); err != nil {
		return nil, err
	}
	return srv.Handler(), nil
}

// connectRedis opens Redis when configured. The default URL is optional:
// unreachable means off. An explicitly configured URL must answer.
func (a *app) connectRedis(ctx context.Context) error {
	if a.cfg.RedisURL == "" {
		return nil
	}
	opts, err := redis.ParseURL(a.cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("AGENTPLANE_REDIS_URL: %w", err)
	}
	client := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		if a.cfg.redisSet {
			return fmt.Errorf("AGENTPLANE_REDIS_URL: %w", err)
		}
		a.logger.Warn("redis not reachable at the default address; running without it", slog.String("error", err.Error()))
		return nil
	}
	a.redis = client
	return nil
}

// run serves until ctx ends, then shuts down in order: stop accepting HTTP,
// let River finish or release in-flight jobs, close the pool (in close).
func (a *app) run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("AGENTPLANE_HTTP_ADDR: %w", err)
	}
	if err := a.runtime.Start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	if err := a.broker.Start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- a.http.Serve(ln) }()
	a.logger.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("role", a.cfg.Role))
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http: %w", err)
		}
	}
	a.logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.StopTimeout+10*time.Second)
	defer cancel()
	if err := a.http.Shutdown(sctx); err != nil {
		a.logger.Warn("http shutdown", slog.String("error", err.Error()))
	}
	if err := a.runtime.Stop(sctx); err != nil {
		a.logger.Warn("river shutdown", slog.String("error", err.Error()))
	}
	a.stopSandboxes(sctx)
	return nil
}

func (a *app) close() {
	if a.pool != nil {
		a.pool.Close()
	}
	if a.redis != nil {
		_ = a.redis.Close()
	}
	if a.cluster != nil {
		if err := a.cluster.Stop(context.Background()); err != nil {
			a.logger.Warn("stop private postgres", slog.String("error", err.Error()))
		}
	}
}
