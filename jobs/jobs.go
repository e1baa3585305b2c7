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
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 20
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 20 * time.Second
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
	return w, nil
}

// periodic is the list of periodic jobs.
func periodic() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) {
			return tenants.SessionSweepArgs{}, &river.InsertOpts{Queue: QueueMaintenance}
		}, &river.PeriodicJobOpts{RunOnStart: true, ID: "tenants.session_sweep"}),
	}
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
		}
		rc.PeriodicJobs = periodic()
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, fmt.Errorf("new river client: %w", err)
	}
	return &Runtime{Client: client, cfg: cfg}, nil
}

// Start begins working jobs when this process is a worker.
func (r *Runtime) Start(ctx context.Context) error {
	if !r.cfg.Work {
		return nil
	}
	if err := r.Client.Start(ctx); err != nil {
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
