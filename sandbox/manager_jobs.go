package sandbox

import (
	"context"
	"log/slog"

	"github.com/riverqueue/river"
)

// ReapArgs asks for sandboxes idle longer than the manager's IdleTimeout to
// be destroyed. It runs periodically (jobs registers it).
type ReapArgs struct{}

// Kind names the job in River.
func (ReapArgs) Kind() string { return "sandbox.reap_idle" }

// ReapWorker destroys idle sandboxes.
type ReapWorker struct {
	river.WorkerDefaults[ReapArgs]
	Manager *Manager
}

// Work runs one reaping pass; sandboxes it could not destroy are retried by
// the next pass, so a partial failure is logged rather than retried.
func (w *ReapWorker) Work(ctx context.Context, _ *river.Job[ReapArgs]) error {
	n, err := w.Manager.ReapIdle(ctx)
	if err != nil {
		w.Manager.logger.WarnContext(ctx, "some idle sandboxes were not reaped", slog.Int("destroyed", n), slog.String("error", err.Error()))
		return nil
	}
	if n > 0 {
		w.Manager.logger.InfoContext(ctx, "idle sandboxes reaped", slog.Int("destroyed", n))
	}
	return nil
}
