package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
)

// Queues. Keep the list short and named for the work's latency class.
const (
	QueueDefault     = river.QueueDefault
	QueueMaintenance = "maintenance"
)

// Config sizes the runtime.
type Config struct {
	// Workers is the default queue's concurrency.
	Workers int
	// Work says whether this process works jobs (role worker or all); an
	// api-only process still needs a client to insert jobs.
	Work bool
	// StopTimeout bounds how long Stop waits for running jobs before
	// cancelling them; cancelled jobs are retried by another worker.
	StopTimeout time.Duration
	// ReapEvery is how often runs with expired leases are looked for.
	ReapEvery time.Duration
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 20
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 20 * time.Second
	}
	if c.ReapEvery == 0 {
		c.ReapEvery = 10 * time.Second
	}
	return c
}

// Validate rejects nonsense sizes.
func (c Config) Validate() error {
	if c.Workers < 1 || c.Workers > 10_000 {
		return fmt.Errorf("workers %d: must be between 1 and 10000", c.Workers)
	}
	return nil
}

// Services are what the workers need.
type Services struct {
	Tenants *tenants.Service
	// Agents runs agent runs; nil leaves run workers out (tests of other jobs).
	Agents *agent.Service
	// Sandboxes reaps idle sandboxes; nil leaves the reaper out.
	Sandboxes *sandbox.Manager
}

// Runtime is the River client with the product's workers.
type Runtime struct {
	Client *river.Client[pgx.Tx]
	cfg    Config
}

// workers is the explicit list of every worker in the product.
func workers(s Services) (*river.Workers, error) {
	w := river.NewWorkers()
	if err := river.AddWorkerSafely(w, &tenants.SessionSweepWorker{Service: s.Tenants}); err != nil {
		return nil, fmt.Errorf("register session sweep: %w", err)
	}
	if s.Agents != nil {
		if err := river.AddWorkerSafely(w, &agent.RunWorker{Service: s.Agents}); err != nil {
			return nil, fmt.Errorf("register run worker: %w", err)
		}
		if err := river.AddWorkerSafely(w, &agent.ReapWorker{Service: s.Agents}); err != nil {
			return nil, fmt.Errorf("register run reaper: %w", err)
		}
		if err := river.AddWorkerSafely(w, &agent.DeliverWorker{Service: s.Agents}); err != nil {
			return nil, fmt.Errorf("register webhook delivery: %w", err)
		}
	}
	if s.Sandboxes != nil {
		if err := river.AddWorkerSafely(w, &sandbox.ReapWorker{Manager: s.Sandboxes}); err != nil {
			return nil, fmt.Errorf("register sandbox reaper: %w", err)
		}
	}
	return w, nil
}

// periodic is the list of periodic jobs.
func periodic(s Services, cfg Config) []*river.PeriodicJob {
	jobs := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
			return tenants.SessionSweepArgs{}, &river.InsertOpts{Queue: QueueMaintenance}
		}, &river.PeriodicJobOpts{RunOnStart: true, ID: "tenants.session_sweep"}),
	}
	if s.Agents != nil {
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(cfg.ReapEvery), func() (river.JobArgs, *river.InsertOpts) {
			return agent.ReapArgs{}, &river.InsertOpts{Queue: QueueMaintenance}
		}, &river.PeriodicJobOpts{RunOnStart: true, ID: "agent.reap_runs"}))
	}
	if s.Sandboxes != nil {
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(time.Minute), func() (river.JobArgs, *river.InsertOpts) {
			return sandbox.ReapArgs{}, &river.InsertOpts{Queue: QueueMaintenance}
		}, &river.PeriodicJobOpts{ID: "sandbox.reap_idle"}))
	}
	return jobs
}

// New builds the runtime. It does not start working until Start.
func New(pool *pgxpool.Pool, cfg Config, s Services, logger *slog.Logger) (*Runtime, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, err := workers(s)
	if err != nil {
		return nil, err
	}
	rc := &river.Config{
		Logger:     logger,
		Workers:    w,
		Middleware: []rivertype.Middleware{&logMiddleware{logger: logger}},
	}
	if cfg.Work {
		rc.Queues = map[string]river.QueueConfig{
			QueueDefault:     {MaxWorkers: cfg.Workers},
			QueueMaintenance: {MaxWorkers: 2},
			agent.QueueRuns:  {MaxWorkers: cfg.Workers},
		}
		rc.PeriodicJobs = periodic(s, cfg)
		// Run jobs are short to fetch and latency matters to users.
		rc.FetchCooldown = 20 * time.Millisecond
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, fmt.Errorf("new river client: %w", err)
	}
	return &Runtime{Client: client, cfg: cfg}, nil
}

// Start begins working jobs when this process is a worker. Only Stop ends
// the work: River treats cancelling its start context as a hard stop that
// cancels running jobs at once, so ctx's cancellation is not passed on —
// otherwise a SIGTERM-cancelled ctx would skip Stop's StopTimeout drain.
func (r *Runtime) Start(ctx context.Context) error {
	if !r.cfg.Work {
		return nil
	}
	if err := r.Client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start river: %w", err)
	}
	return nil
}

// Stop lets running jobs finish within StopTimeout (or ctx), then cancels
// the rest; River releases them so another worker retries.
func (r *Runtime) Stop(ctx context.Context) error {
	if !r.cfg.Work {
		return nil
	}
	soft, cancel := context.WithTimeout(ctx, r.cfg.StopTimeout)
	defer cancel()
	err := r.Client.Stop(soft)
	if err == nil {
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("stop river: %w", err)
	}
	hard, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel2()
	if err := r.Client.StopAndCancel(hard); err != nil {
		return fmt.Errorf("stop river (cancelling jobs): %w", err)
	}
	return nil
}
