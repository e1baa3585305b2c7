package agent

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// SandboxReleaser hands a thread's sandbox back (to the provider's warm
// pool, idle, lease cleared) when a run ends; sandbox.Manager implements it.
type SandboxReleaser interface {
	Release(ctx context.Context, tenantID, threadID uuid.UUID) error
}

// releaseSandbox hands the run's sandbox back at run end, when the runtime
// has sandboxes. A failure is logged: the lease expires and the reaper
// cleans up.
func (r *runState) releaseSandbox(ctx context.Context) {
	if r.s.rt.Sandboxes == nil {
		return
	}
	if err := r.s.rt.Sandboxes.Release(ctx, r.row.TenantID, r.row.ThreadID); err != nil && !errors.Is(err, context.Canceled) {
		r.s.logger.WarnContext(ctx, "release sandbox at run end", "run_id", r.row.ID, "error", err)
	}
}
