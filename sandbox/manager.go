package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/sandbox/internal/sandboxdb"
)

// Sandbox statuses as stored.
const (
	StatusActive    = "active"
	StatusIdle      = "idle"
	StatusDestroyed = "destroyed"
)

// ManagerConfig tunes sandbox persistence and leases.
type ManagerConfig struct {
	// Owner names this process in sandbox leases (host:pid or similar); the
	// same name as the run leases' owner keeps one worker's runs and their
	// subagents on one lease.
	Owner string
	// LeaseTTL is how long a lease lives after its last use; each Ensure
	// renews it. A worker that dies holding a lease blocks the sandbox for
	// at most this long.
	LeaseTTL time.Duration
	// LeaseWait bounds how long Ensure waits for another owner's lease to
	// end before it reports ErrLeaseConflict.
	LeaseWait time.Duration
	// IdleTimeout is how long a sandbox may sit unused before ReapIdle
	// destroys it (its files stay with the thread).
	IdleTimeout time.Duration
	// Acquire shapes every sandbox this manager acquires.
	Acquire AcquireOptions
}

// WithDefaults fills unset fields.
func (c ManagerConfig) WithDefaults() ManagerConfig {
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 2 * time.Minute
	}
	if c.LeaseWait == 0 {
		c.LeaseWait = 10 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 30 * time.Minute
	}
	return c
}

// Validate rejects settings that break an invariant.
func (c ManagerConfig) Validate() error {
	switch {
	case c.Owner == "":
		return errors.New("sandbox manager: owner is required")
	case c.LeaseTTL < time.Second:
		return fmt.Errorf("sandbox lease ttl %s: must be at least 1s", c.LeaseTTL)
	case c.LeaseWait < 0:
		return fmt.Errorf("sandbox lease wait %s: must not be negative", c.LeaseWait)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("sandbox idle timeout %s: must be positive", c.IdleTimeout)
	}
	return nil
}

// Manager is the system of record for sandboxes: which sandbox a thread
// has, who drives it (an ownership lease, so two workers never drive one
// sandbox at once), and when it went idle. It acquires lazily, releases at
// run end and destroys what stayed idle too long.
type Manager struct {
	pool     *pgxpool.Pool
	provider Provider
	cfg      ManagerConfig
	logger   *slog.Logger
}

// NewManager wires a manager over a provider.
func NewManager(pool *pgxpool.Pool, provider Provider, cfg ManagerConfig, logger *slog.Logger) (*Manager, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if provider == nil {
		return nil, errors.New("sandbox manager: provider is required")
	}
	return &Manager{pool: pool, provider: provider, cfg: cfg, logger: logger}, nil
}

// Provider is the provider the manager's sandboxes live in; callers use it
// for Exec and file operations on an id Ensure returned.
func (m *Manager) Provider() Provider { return m.provider }

// errBusy means another owner's lease is live right now.
var errBusy = errors.New("sandbox lease held by another owner")

// pollEvery is how often Ensure looks again while another owner holds the lease.
const pollEvery = 50 * time.Millisecond

// Ensure returns the thread's sandbox id, leased to this manager's owner,
// acquiring a sandbox on first use. An existing live sandbox is reused
// (lease renewed, re-acquired from the provider under the same id). A
// thread whose sandbox was destroyed gets a new one: when its id differs
// from the destroyed one, replaced is true and the change is logged — an id
// is never changed silently. While another owner's lease is live, Ensure
// polls for up to LeaseWait, then fails with ErrLeaseConflict.
func (m *Manager) Ensure(ctx context.Context, tenantID, threadID uuid.UUID) (id string, replaced bool, err error) {
	deadline := time.Now().Add(m.cfg.LeaseWait)
	for {
		id, replaced, err = m.ensureOnce(ctx, tenantID, threadID)
		if !errors.Is(err, errBusy) {
			if err != nil {
				return "", false, fmt.Errorf("ensure sandbox of thread %s: %w", threadID, err)
			}
			return id, replaced, nil
		}
		if time.Now().After(deadline) {
			return "", false, fmt.Errorf("ensure sandbox of thread %s: %w", threadID, ErrLeaseConflict)
		}
		select {
		case <-ctx.Done():
			return "", false, fmt.Errorf("ensure sandbox of thread %s: %w", threadID, context.Cause(ctx))
		case <-time.After(pollEvery):
		}
	}
}

// ensureOnce makes one attempt; errBusy asks the caller to try again.
func (m *Manager) ensureOnce(ctx context.Context, tenantID, threadID uuid.UUID) (string, bool, error) {
	q := sandboxdb.New(m.pool)
	live, err := q.LiveSandbox(ctx, sandboxdb.LiveSandboxParams{TenantID: tenantID, ThreadID: threadID})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return m.acquireNew(ctx, tenantID, threadID)
	case err != nil:
		return "", false, fmt.Errorf("read live sandbox: %w", err)
	}
	if _, err := q.ClaimSandbox(ctx, sandboxdb.ClaimSandboxParams{
		TenantID: tenantID, ID: live.ID, Owner: m.cfg.Owner, TtlSeconds: m.cfg.LeaseTTL.Seconds(),
	}); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", false, errBusy // leased elsewhere, or destroyed meanwhile: look again
		}
		return "", false, fmt.Errorf("lease sandbox %s: %w", live.ID, err)
	}
	got, err := m.provider.Acquire(ctx, tenantID, threadID, m.cfg.Acquire)
	if err != nil {
		return "", false, fmt.Errorf("re-acquire sandbox %s: %w", live.ID, err)
	}
	if got == live.ID {
		return got, false, nil
	}
	// The provider no longer has the recorded sandbox and made another one:
	// record the old one as destroyed and the new one in its place.
	if _, err := q.MarkDestroyed(ctx, sandboxdb.MarkDestroyedParams{TenantID: tenantID, ID: live.ID, Owner: m.cfg.Owner}); err != nil {
		return "", false, fmt.Errorf("retire sandbox %s: %w", live.ID, err)
	}
	m.logger.WarnContext(ctx, "provider lost the thread's sandbox; recording the new one",
		slog.String("tenant_id", tenantID.String()), slog.String("thread_id", threadID.String()),
		slog.String("old_sandbox_id", live.ID), slog.String("sandbox_id", got))
	return m.record(ctx, tenantID, threadID, got)
}

// acquireNew acquires a sandbox for a thread without a live one and
// records it.
func (m *Manager) acquireNew(ctx context.Context, tenantID, threadID uuid.UUID) (string, bool, error) {
	// Refuse early (and without provider side effects) for a thread that
	// does not exist in this tenant.
	if _, err := sandboxdb.New(m.pool).LockThreadSandbox(ctx, sandboxdb.LockThreadSandboxParams{TenantID: tenantID, ThreadID: threadID}); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", false, fmt.Errorf("thread %s: %w", threadID, ErrNotFound)
		}
		return "", false, fmt.Errorf("read thread: %w", err)
	}
	id, err := m.provider.Acquire(ctx, tenantID, threadID, m.cfg.Acquire)
	if err != nil {
		return "", false, fmt.Errorf("acquire sandbox: %w", err)
	}
	return m.record(ctx, tenantID, threadID, id)
}

// record stores a sandbox the provider just handed out as the thread's
// live sandbox, leased to this owner, and writes its id on the thread.
func (m *Manager) record(ctx context.Context, tenantID, threadID uuid.UUID, id string) (string, bool, error) {
	var old *string
	err := pg.WithTx(ctx, m.pool, func(ctx context.Context, tx pgx.Tx) error {
		q := sandboxdb.New(tx)
		var err error
		if old, err = q.LockThreadSandbox(ctx, sandboxdb.LockThreadSandboxParams{TenantID: tenantID, ThreadID: threadID}); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("thread %s: %w", threadID, ErrNotFound)
			}
			return fmt.Errorf("lock thread: %w", err)
		}
		_, err = q.InsertSandbox(ctx, sandboxdb.InsertSandboxParams{
			TenantID: tenantID, ID: id, ThreadID: threadID, Provider: m.provider.Name(),
			Owner: m.cfg.Owner, TtlSeconds: m.cfg.LeaseTTL.Seconds(),
		})
		if errors.Is(err, pgx.ErrNoRows) || pg.IsCode(err, pg.CodeUniqueViolation) {
			return errBusy // another worker recorded the thread's sandbox first
		}
		if err != nil {
			return fmt.Errorf("record sandbox %s: %w", id, err)
		}
		n, err := q.SetThreadSandbox(ctx, sandboxdb.SetThreadSandboxParams{TenantID: tenantID, ThreadID: threadID, SandboxID: id})
		if err != nil {
			return fmt.Errorf("store sandbox id on thread: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("thread %s still has live sandbox %s: refusing to replace its id", threadID, deref(old))
		}
		return nil
	})
	if errors.Is(err, errBusy) {
		m.discardLoser(ctx, tenantID, threadID, id)
		return "", false, errBusy
	}
	if err != nil {
		return "", false, err
	}
	replaced := old != nil && *old != id
	attrs := []any{
		slog.String("tenant_id", tenantID.String()), slog.String("thread_id", threadID.String()),
		slog.String("sandbox_id", id), slog.String("provider", m.provider.Name()),
	}
	if replaced {
		m.logger.WarnContext(ctx, "thread's sandbox was destroyed; replaced it with a new id",
			append(attrs, slog.String("old_sandbox_id", *old))...)
	} else {
		m.logger.InfoContext(ctx, "sandbox acquired", attrs...)
	}
	return id, replaced, nil
}

// discardLoser destroys a sandbox acquired in a race another worker won,
// unless the provider gave both the same id.
func (m *Manager) discardLoser(ctx context.Context, tenantID, threadID uuid.UUID, id string) {
	live, err := sandboxdb.New(m.pool).LiveSandbox(ctx, sandboxdb.LiveSandboxParams{TenantID: tenantID, ThreadID: threadID})
	if err == nil && live.ID == id {
		return
	}
	if err := m.provider.Destroy(context.WithoutCancel(ctx), id); err != nil && !errors.Is(err, ErrNotFound) {
		m.logger.WarnContext(ctx, "destroy sandbox that lost an acquisition race", slog.String("sandbox_id", id), slog.String("error", err.Error()))
	}
}

// Release ends this owner's use of the thread's sandbox at run end: the
// provider returns it to its warm pool, and it becomes idle with its lease
// cleared and its idle clock started. A thread without a sandbox, or whose
// sandbox another owner holds now, is left alone.
func (m *Manager) Release(ctx context.Context, tenantID, threadID uuid.UUID) error {
	q := sandboxdb.New(m.pool)
	live, err := q.LiveSandbox(ctx, sandboxdb.LiveSandboxParams{TenantID: tenantID, ThreadID: threadID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release sandbox of thread %s: %w", threadID, err)
	}
	if live.LeaseOwner == nil || *live.LeaseOwner != m.cfg.Owner {
		return nil
	}
	if err := m.provider.Release(ctx, live.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("release sandbox %s: %w", live.ID, err)
	}
	if _, err := q.ReleaseSandbox(ctx, sandboxdb.ReleaseSandboxParams{TenantID: tenantID, ID: live.ID, Owner: m.cfg.Owner}); err != nil {
		return fmt.Errorf("release sandbox %s: %w", live.ID, err)
	}
	return nil
}

// reapBatch bounds one ReapIdle pass.
const reapBatch = 100

// ReapIdle destroys sandboxes unused for longer than IdleTimeout that no
// live lease holds (idle ones, and active ones whose owner died) and
// returns how many it destroyed. Each is leased to the reaper while it is
// destroyed, so a worker that wants it meanwhile waits and then gets a new
// one. A failed destroy leaves the sandbox for the next pass.
func (m *Manager) ReapIdle(ctx context.Context) (int, error) {
	q := sandboxdb.New(m.pool)
	idle := m.cfg.IdleTimeout.Seconds()
	rows, err := q.ReapableSandboxes(ctx, sandboxdb.ReapableSandboxesParams{IdleSeconds: idle, Lim: reapBatch})
	if err != nil {
		return 0, fmt.Errorf("find idle sandboxes: %w", err)
	}
	var (
		n    int
		errs []error
	)
	for _, r := range rows {
		sb, err := q.ClaimForReap(ctx, sandboxdb.ClaimForReapParams{
			TenantID: r.TenantID, ID: r.ID, Owner: m.cfg.Owner, TtlSeconds: m.cfg.LeaseTTL.Seconds(), IdleSeconds: idle,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // used or claimed since the scan
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("lease sandbox %s for reaping: %w", r.ID, err))
			continue
		}
		if err := m.provider.Destroy(ctx, sb.ID); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("destroy sandbox %s: %w", sb.ID, err))
			_, _ = q.DropLease(context.WithoutCancel(ctx), sandboxdb.DropLeaseParams{TenantID: sb.TenantID, ID: sb.ID, Owner: m.cfg.Owner})
			continue
		}
		if _, err := q.MarkDestroyed(ctx, sandboxdb.MarkDestroyedParams{TenantID: sb.TenantID, ID: sb.ID, Owner: m.cfg.Owner}); err != nil {
			errs = append(errs, fmt.Errorf("record destroy of sandbox %s: %w", sb.ID, err))
			continue
		}
		n++
		m.logger.InfoContext(ctx, "idle sandbox destroyed",
			slog.String("tenant_id", sb.TenantID.String()), slog.String("thread_id", sb.ThreadID.String()),
			slog.String("sandbox_id", sb.ID), slog.Duration("idle", time.Since(sb.LastUsedAt)))
	}
	return n, errors.Join(errs...)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
