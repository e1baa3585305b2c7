package tenants

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river"

	"github.com/agentplane/agentplane/tenants/internal/tenantsdb"
)

// SessionSweepArgs asks for expired console sessions to be deleted. It runs
// periodically; sessions are also refused on expiry, so the sweep only keeps
// the table small.
type SessionSweepArgs struct{}

// Kind names the job in River.
func (SessionSweepArgs) Kind() string { return "tenants.session_sweep" }

// SessionSweepWorker deletes expired sessions.
type SessionSweepWorker struct {
	river.WorkerDefaults[SessionSweepArgs]
	Service *Service
}

// Work deletes every expired session in one statement.
func (w *SessionSweepWorker) Work(ctx context.Context, _ *river.Job[SessionSweepArgs]) error {
	n, err := tenantsdb.New(w.Service.pool).DeleteExpiredSessions(ctx)
	if err != nil {
		return fmt.Errorf("sweep sessions: %w", err)
	}
	w.Service.logger.InfoContext(ctx, "expired sessions swept", slog.Int64("deleted", n))
	return nil
}
