package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/internal/requestid"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit/internal/auditdb"
)

// Event is one change to record in a tenant's audit log.
type Event struct {
	TenantID uuid.UUID
	// Actor is who made the change; its Kind and ID are stored, not Label.
	Actor policy.Principal
	// Action names the change as noun.verb, e.g. "member.create".
	Action string
	// TargetKind and TargetID name what was changed, e.g. "member" and its id.
	TargetKind string
	TargetID   string
	// Diff describes the change (new values, or {"old": …, "new": …}). It
	// must be JSON-encodable and must never hold secret values.
	Diff map[string]any
}

func (e Event) validate() error {
	switch {
	case e.TenantID == uuid.Nil:
		return fmt.Errorf("%w: tenant id is required", ErrInvalidEvent)
	case e.Action == "":
		return fmt.Errorf("%w: action is required", ErrInvalidEvent)
	case e.Actor.Kind == "" || e.Actor.ID == "":
		return fmt.Errorf("%w: actor kind and id are required", ErrInvalidEvent)
	}
	return nil
}

// Record appends e to its tenant's audit log inside tx, the transaction that
// makes the change e describes, so the event commits or rolls back with it.
// It holds the tenant's head row locked until tx ends. The request id comes
// from ctx.
func Record(ctx context.Context, tx pgx.Tx, e Event) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("record audit event %q for tenant %s: %w", e.Action, e.TenantID, err)
		}
	}()
	if err := e.validate(); err != nil {
		return err
	}
	diff, err := prepareDiff(e.Diff)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("new event id: %w", err)
	}

	q := auditdb.New(tx)
	// Create-then-lock rather than lock-then-create: a plain SELECT … FOR
	// UPDATE finds nothing for a new tenant, and two first appends would both
	// try to insert seq 1.
	err = q.EnsureHead(ctx, auditdb.EnsureHeadParams{TenantID: e.TenantID, GenesisHash: genesisHash[:]})
	if pg.IsCode(err, pg.CodeForeignKeyViolation) {
		return fmt.Errorf("%w: unknown tenant", ErrInvalidEvent)
	}
	if err != nil {
		return fmt.Errorf("create audit head: %w", err)
	}
	head, err := q.LockHead(ctx, e.TenantID)
	if err != nil {
		return fmt.Errorf("lock audit head: %w", err)
	}

	row := auditdb.AuditEvent{
		TenantID:   e.TenantID,
		Seq:        head.Seq + 1,
		ID:         id,
		ActorKind:  string(e.Actor.Kind),
		ActorID:    e.Actor.ID,
		Action:     e.Action,
		TargetKind: e.TargetKind,
		TargetID:   e.TargetID,
		RequestID:  requestid.From(ctx),
		Diff:       diff,
		// Read the clock under the lock so created_at follows seq order
		// (as far as the clock does), which List's time filters rely on.
		CreatedAt: storedTime(time.Now()),
		PrevHash:  head.Hash,
	}
	if row.Hash, err = hashRow(row); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if err := q.InsertEvent(ctx, auditdb.InsertEventParams(row)); err != nil {
		return fmt.Errorf("insert audit event: %w", err)
	}
	if err := q.UpdateHead(ctx, auditdb.UpdateHeadParams{TenantID: row.TenantID, Seq: row.Seq, Hash: row.Hash}); err != nil {
		return fmt.Errorf("advance audit head: %w", err)
	}
	return nil
}
