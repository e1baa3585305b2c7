package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
)

// RunArgs asks a worker to execute (or resume) a run.
type RunArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	RunID    uuid.UUID `json:"run_id"`
	// SecretNames lists request-scoped secrets the run was created with;
	// their values live only in the creating process's memory.
	SecretNames []string `json:"secret_names,omitempty"`
}

// Kind names the job in River.
func (RunArgs) Kind() string { return "agent.run" }

// InsertOpts keeps run jobs on their own queue.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRuns, MaxAttempts: 10}
}

// QueueRuns is the River queue for run jobs.
const QueueRuns = "runs"

func (s *Service) enqueue(ctx context.Context, tx pgx.Tx, r Run, secrets map[string]string) error {
	if s.queue == nil {
		return errors.New("enqueue run: no job queue configured")
	}
	args := RunArgs{TenantID: r.TenantID, RunID: r.ID}
	for n := range secrets {
		args.SecretNames = append(args.SecretNames, n)
	}
	if _, err := s.queue.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("enqueue run %s: %w", r.ID, err)
	}
	return nil
}

// RunWorker executes runs.
type RunWorker struct {
	river.WorkerDefaults[RunArgs]
	Service *Service
}

// Timeout is off: a run bounds itself by its agent's timeout, and its lease
// (not River's job timeout) decides whether a silent worker is dead.
func (w *RunWorker) Timeout(*river.Job[RunArgs]) time.Duration { return -1 }

// Work claims the run and drives it to a terminal status.
func (w *RunWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	return w.Service.Execute(ctx, job.Args)
}

// ReapArgs asks for runs with expired leases to be handed to a new worker.
type ReapArgs struct{}

// Kind names the job in River.
func (ReapArgs) Kind() string { return "agent.reap_runs" }

// ReapWorker re-enqueues runs whose worker stopped heartbeating.
type ReapWorker struct {
	river.WorkerDefaults[ReapArgs]
	Service *Service
}

// Work re-enqueues each expired run; the claim's epoch bump fences the old
// worker out if it is still alive somewhere.
func (w *ReapWorker) Work(ctx context.Context, _ *river.Job[ReapArgs]) error {
	_, err := w.Service.Reap(ctx)
	return err
}

// Reap re-enqueues runs whose lease expired and returns how many.
func (s *Service) Reap(ctx context.Context) (int, error) {
	rows, err := agentdb.New(s.pool).ExpiredRuns(ctx, 100)
	if err != nil {
		return 0, fmt.Errorf("find expired runs: %w", err)
	}
	for _, r := range rows {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return 0, fmt.Errorf("reap: %w", err)
		}
		_, err = s.queue.InsertTx(ctx, tx, RunArgs{TenantID: r.TenantID, RunID: r.ID}, nil)
		if err == nil {
			err = tx.Commit(ctx)
		}
		_ = tx.Rollback(ctx)
		if err != nil {
			return 0, fmt.Errorf("re-enqueue run %s: %w", r.ID, err)
		}
		s.logger.InfoContext(ctx, "run lease expired; re-enqueued", "run_id", r.ID, "tenant_id", r.TenantID)
	}
	return len(rows), nil
}

// Execute claims a run and drives it. It returns nil when there is nothing
// to do (finished, cancelled, or driven by a live worker elsewhere) and a
// snooze when an earlier run of the same thread has not finished.
func (s *Service) Execute(ctx context.Context, args RunArgs) error {
	row, err := agentdb.New(s.pool).ClaimRun(ctx, agentdb.ClaimRunParams{
		TenantID: args.TenantID, ID: args.RunID, Owner: &s.rt.Owner, TtlSeconds: s.leaseTTLSeconds(),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return s.unclaimable(ctx, args)
	}
	if err != nil {
		return fmt.Errorf("claim run %s: %w", args.RunID, err)
	}
	r := &runState{s: s, row: row, epoch: row.LeaseEpoch, args: args}
	return r.drive(ctx)
}

func (s *Service) unclaimable(ctx context.Context, args RunArgs) error {
	row, err := agentdb.New(s.pool).RunByID(ctx, agentdb.RunByIDParams{TenantID: args.TenantID, ID: args.RunID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read run %s: %w", args.RunID, err)
	}
	if row.Status == StatusQueued {
		// An earlier run of this thread is still going: wait our turn.
		return river.JobSnooze(time.Second)
	}
	return nil // finished, or held by a live lease elsewhere
}
