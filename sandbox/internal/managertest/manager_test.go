package managertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
)

// mgrEnv is one tenant with a thread, a real host provider on a temporary
// tree, and a way to build managers (workers) over it.
type mgrEnv struct {
	t        *testing.T
	pool     *pgxpool.Pool
	tenant   uuid.UUID
	thread   uuid.UUID
	provider sandbox.Provider
	logs     *syncBuffer
}

func newMgrEnv(t *testing.T) *mgrEnv {
	t.Helper()
	pool := pgtest.Pool(t)
	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	slug := "sbx-" + pgtest.Suffix()
	tn, err := tsvc.CreateTenant(t.Context(), policy.System, tenants.CreateTenantInput{Slug: slug, Name: slug})
	require.NoError(t, err)
	host, err := sandbox.NewHost(sandbox.Tree{Root: t.TempDir()}, sandbox.Limits{WallTime: 10 * time.Second}, true)
	require.NoError(t, err)
	e := &mgrEnv{t: t, pool: pool, tenant: tn.ID, provider: host, logs: &syncBuffer{}}
	e.thread = e.newThread()
	return e
}

func (e *mgrEnv) newThread() uuid.UUID {
	e.t.Helper()
	id := uuid.Must(uuid.NewV7())
	_, err := e.pool.Exec(e.t.Context(), `INSERT INTO threads (tenant_id, id, title, created_by) VALUES ($1, $2, 'sandbox test', 'test')`, e.tenant, id)
	require.NoError(e.t, err)
	return id
}

func (e *mgrEnv) manager(owner string, mod ...func(*sandbox.ManagerConfig)) *sandbox.Manager {
	e.t.Helper()
	cfg := sandbox.ManagerConfig{Owner: owner, LeaseWait: 300 * time.Millisecond, IdleTimeout: time.Hour}
	for _, f := range mod {
		f(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := sandbox.NewManager(e.pool, e.provider, cfg, logger)
	require.NoError(e.t, err)
	return m
}

type sandboxRow struct {
	status     string
	leaseOwner *string
	destroyed  bool
}

func (e *mgrEnv) row(id string) sandboxRow {
	e.t.Helper()
	var r sandboxRow
	err := e.pool.QueryRow(e.t.Context(), `SELECT status, lease_owner, destroyed_at IS NOT NULL FROM sandboxes WHERE tenant_id = $1 AND id = $2`, e.tenant, id).
		Scan(&r.status, &r.leaseOwner, &r.destroyed)
	require.NoError(e.t, err)
	return r
}

func (e *mgrEnv) threadSandbox(thread uuid.UUID) *string {
	e.t.Helper()
	var id *string
	require.NoError(e.t, e.pool.QueryRow(e.t.Context(), `SELECT sandbox_id FROM threads WHERE tenant_id = $1 AND id = $2`, e.tenant, thread).Scan(&id))
	return id
}

func (e *mgrEnv) count(thread uuid.UUID) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.pool.QueryRow(e.t.Context(), `SELECT count(*) FROM sandboxes WHERE tenant_id = $1 AND thread_id = $2`, e.tenant, thread).Scan(&n))
	return n
}

func ptr(s string) *string { return &s }

func TestManagerEnsureIsLazyAndStable(t *testing.T) {
	t.Parallel()
	e := newMgrEnv(t)
	m := e.manager("worker-a")
	ctx := t.Context()

	require.Zero(t, e.count(e.thread), "nothing is acquired before the first Ensure")
	require.Nil(t, e.threadSandbox(e.thread))

	id, replaced, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	require.False(t, replaced)
	require.Equal(t, "host-"+e.thread.String(), id)
	require.Equal(t, sandboxRow{status: sandbox.StatusActive, leaseOwner: ptr("worker-a")}, e.row(id))
	require.Equal(t, ptr(id), e.threadSandbox(e.thread))

	require.NoError(t, m.Provider().WriteFile(ctx, id, "/mnt/user-data/workspace/a.txt", []byte("kept"), false))
	for range 3 {
		again, replaced, err := m.Ensure(ctx, e.tenant, e.thread)
		require.NoError(t, err)
		require.False(t, replaced)
		require.Equal(t, id, again)
	}
	require.Equal(t, 1, e.count(e.thread))
	data, err := m.Provider().ReadFile(ctx, id, "/mnt/user-data/workspace/a.txt")
	require.NoError(t, err)
	require.Equal(t, "kept", string(data))

	// After a release the same sandbox comes back, active and leased again.
	require.NoError(t, m.Release(ctx, e.tenant, e.thread))
	again, _, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	require.Equal(t, id, again)
	require.Equal(t, sandboxRow{status: sandbox.StatusActive, leaseOwner: ptr("worker-a")}, e.row(id))
}

func TestManagerEnsureIsTenantScoped(t *testing.T) {
	t.Parallel()
	e := newMgrEnv(t)
	other := newMgrEnv(t)
	m := e.manager("worker-a")
	_, _, err := m.Ensure(t.Context(), e.tenant, uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	// Another tenant's thread is not found either, and nothing is recorded.
	_, _, err = m.Ensure(t.Context(), e.tenant, other.thread)
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	require.Zero(t, other.count(other.thread))
}

func TestManagerLeaseConflictBetweenOwners(t *testing.T) {
	t.Parallel()
	e := newMgrEnv(t)
	a, b := e.manager("worker-a"), e.manager("worker-b")
	ctx := t.Context()

	id, _, err := a.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)

	start := time.Now()
	_, _, err = b.Ensure(ctx, e.tenant, e.thread)
	require.ErrorIs(t, err, sandbox.ErrLeaseConflict)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "b waits for the lease before giving up")
	require.Less(t, time.Since(start), 3*time.Second, "the wait is bounded")
	require.Equal(t, ptr("worker-a"), e.row(id).leaseOwner, "a keeps its lease")

	// b's release does nothing to a's lease.
	require.NoError(t, b.Release(ctx, e.tenant, e.thread))
	require.Equal(t, sandboxRow{status: sandbox.StatusActive, leaseOwner: ptr("worker-a")}, e.row(id))

	// b waiting while a finishes gets the sandbox as soon as a releases it.
	patient := e.manager("worker-b", func(c *sandbox.ManagerConfig) { c.LeaseWait = 10 * time.Second })
	got := make(chan error, 1)
	go func() {
		bid, _, err := patient.Ensure(ctx, e.tenant, e.thread)
		if err == nil && bid != id {
			err = fmt.Errorf("b got sandbox %s, want %s", bid, id)
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("b drove the sandbox while a held it (err %v)", err)
	default:
	}
	require.NoError(t, a.Release(ctx, e.tenant, e.thread))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("b never got the released sandbox")
	}
	require.Equal(t, ptr("worker-b"), e.row(id).leaseOwner)
	_, _, err = a.Ensure(ctx, e.tenant, e.thread)
	require.ErrorIs(t, err, sandbox.ErrLeaseConflict, "now a must wait for b")
}

func TestManagerExpiredLeaseIsTakenOver(t *testing.T) {
	t.Parallel()
	e := newMgrEnv(t)
	short := func(c *sandbox.ManagerConfig) { c.LeaseTTL = time.Second }
	a, b := e.manager("worker-a", short), e.manager("worker-b", short)
	id, _, err := a.Ensure(t.Context(), e.tenant, e.thread)
	require.NoError(t, err)
	// a dies without releasing; once its lease expires b takes over.
	time.Sleep(1100 * time.Millisecond)
	got, replaced, err := b.Ensure(t.Context(), e.tenant, e.thread)
	require.NoError(t, err)
	require.False(t, replaced)
	require.Equal(t, id, got)
	require.Equal(t, ptr("worker-b"), e.row(id).leaseOwner)
}

func TestManagerConcurrentFirstEnsure(t *testing.T) {
	t.Parallel()
	e := newMgrEnv(t)
	managers := []*sandbox.Manager{e.manager("worker-a"), e.manager("worker-b"), e.manager("worker-c"), e.manager("worker-d")}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ids []string
		ok  int
	)
	for _, m := range managers {
		wg.Go(func() {
			id, _, err := m.Ensure(t.Context(), e.tenant, e.thread)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				ids = append(ids, id)
				return
			}
			if !errors.Is(err, sandbox.ErrLeaseConflict) {
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, ok, "exactly one worker drives the thread's sandbox")
	require.Equal(t, 1, e.count(e.thread))
	require.Equal(t, ptr(ids[0]), e.threadSandbox(e.thread))
}

func TestManagerReleaseIdleReap(t *testing.T) {
	// Not parallel: reaping spans tenants, and another test's reaper, with
	// its own provider, would reap this test's sandboxes behind its back.
	// Sequential tests run before the parallel ones start.
	e := newMgrEnv(t)
	idle := func(c *sandbox.ManagerConfig) { c.IdleTimeout = 500 * time.Millisecond }
	m := e.manager("worker-a", idle)
	reaper := e.manager("reaper", idle)
	ctx := t.Context()

	id, _, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	// In use: never reaped however long since it was acquired.
	busy := e.newThread()
	busyID, _, err := m.Ensure(ctx, e.tenant, busy)
	require.NoError(t, err)

	require.NoError(t, m.Release(ctx, e.tenant, e.thread))
	require.Equal(t, sandboxRow{status: sandbox.StatusIdle}, e.row(id))
	_, err = reaper.ReapIdle(ctx)
	require.NoError(t, err)
	require.Equal(t, sandbox.StatusIdle, e.row(id).status, "not idle long enough yet")

	time.Sleep(700 * time.Millisecond)
	n, err := reaper.ReapIdle(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	r := e.row(id)
	require.Equal(t, sandbox.StatusDestroyed, r.status)
	require.True(t, r.destroyed)
	require.Nil(t, r.leaseOwner)
	require.Equal(t, sandbox.StatusActive, e.row(busyID).status, "a leased sandbox is not reaped")
	_, err = m.Provider().Stat(ctx, id, "/mnt/user-data")
	require.ErrorIs(t, err, sandbox.ErrNotFound, "the provider destroyed it")

	// The next use gets a fresh sandbox; the thread's files are still there.
	require.NoError(t, m.Provider().WriteFile(ctx, busyID, "/mnt/user-data/outputs/still.txt", []byte("here"), false))
	again, replaced, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	require.Equal(t, id, again, "the host provider hands out the same id again")
	require.False(t, replaced, "same id: nothing replaced")
	require.Equal(t, sandboxRow{status: sandbox.StatusActive, leaseOwner: ptr("worker-a")}, e.row(id))
	require.Equal(t, 1, e.count(e.thread))
}

func TestManagerReapsDeadWorkersSandbox(t *testing.T) {
	// Not parallel: reaping spans tenants, and another test's reaper, with
	// its own provider, would reap this test's sandboxes behind its back.
	// Sequential tests run before the parallel ones start.
	e := newMgrEnv(t)
	cfg := func(c *sandbox.ManagerConfig) { c.LeaseTTL, c.IdleTimeout = time.Second, 500*time.Millisecond }
	dead, reaper := e.manager("worker-dead", cfg), e.manager("reaper", cfg)
	id, _, err := dead.Ensure(t.Context(), e.tenant, e.thread)
	require.NoError(t, err)
	time.Sleep(1200 * time.Millisecond) // lease expired, idle too long, never released
	_, err = reaper.ReapIdle(t.Context())
	require.NoError(t, err)
	require.Equal(t, sandbox.StatusDestroyed, e.row(id).status)
}

func TestManagerReapWorker(t *testing.T) {
	// Not parallel: reaping spans tenants, and another test's reaper, with
	// its own provider, would reap this test's sandboxes behind its back.
	// Sequential tests run before the parallel ones start.
	e := newMgrEnv(t)
	m := e.manager("worker-a", func(c *sandbox.ManagerConfig) { c.IdleTimeout = 200 * time.Millisecond })
	id, _, err := m.Ensure(t.Context(), e.tenant, e.thread)
	require.NoError(t, err)
	require.NoError(t, m.Release(t.Context(), e.tenant, e.thread))
	time.Sleep(300 * time.Millisecond)

	w := rivertest.NewWorker(t, riverpgxv5.New(e.pool), &river.Config{}, river.Worker[sandbox.ReapArgs](&sandbox.ReapWorker{Manager: m}))
	tx := pgtest.Tx(t)
	res, err := w.Work(t.Context(), t, tx, sandbox.ReapArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, sandbox.StatusDestroyed, e.row(id).status)
}

// genProvider is the host provider with ids that change after a destroy,
// as a provider with per-instance ids would behave.
type genProvider struct {
	sandbox.Provider
	mu  sync.Mutex
	gen map[string]int
}

func (g *genProvider) Acquire(ctx context.Context, tenantID, threadID uuid.UUID, opts sandbox.AcquireOptions) (string, error) {
	base, err := g.Provider.Acquire(ctx, tenantID, threadID, opts)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return fmt.Sprintf("%s~%d", base, g.gen[base]), nil
}

func (g *genProvider) bump(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen[base(id)]++
}

func (g *genProvider) Destroy(ctx context.Context, id string) error {
	g.bump(id)
	return g.Provider.Destroy(ctx, base(id))
}

func (g *genProvider) Release(ctx context.Context, id string) error {
	return g.Provider.Release(ctx, base(id))
}

func base(id string) string { b, _, _ := strings.Cut(id, "~"); return b }

func TestManagerReplacedIDIsLogged(t *testing.T) {
	// Not parallel: reaping spans tenants, and another test's reaper, with
	// its own provider, would reap this test's sandboxes behind its back.
	// Sequential tests run before the parallel ones start.
	e := newMgrEnv(t)
	gp := &genProvider{Provider: e.provider, gen: map[string]int{}}
	e.provider = gp
	m := e.manager("worker-a", func(c *sandbox.ManagerConfig) { c.IdleTimeout = 200 * time.Millisecond })
	ctx := t.Context()

	first, replaced, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	require.False(t, replaced)
	require.NoError(t, m.Release(ctx, e.tenant, e.thread))
	time.Sleep(300 * time.Millisecond)
	_, err = m.ReapIdle(ctx)
	require.NoError(t, err)
	require.Equal(t, sandbox.StatusDestroyed, e.row(first).status)

	second, replaced, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	require.True(t, replaced, "a new id for the thread is reported")
	require.NotEqual(t, first, second)
	require.Equal(t, ptr(second), e.threadSandbox(e.thread))
	require.Equal(t, sandbox.StatusDestroyed, e.row(first).status)
	require.Equal(t, sandbox.StatusActive, e.row(second).status)
	logs := e.logs.String()
	require.Contains(t, logs, "replaced it with a new id")
	require.Contains(t, logs, "old_sandbox_id="+first)
	require.Contains(t, logs, "sandbox_id="+second)

	// A provider that lost a live sandbox (a restart) is caught too: the
	// recorded one is retired and the change reported.
	gp.bump(second)
	third, replaced, err := m.Ensure(ctx, e.tenant, e.thread)
	require.NoError(t, err)
	require.True(t, replaced)
	require.NotEqual(t, second, third)
	require.Equal(t, sandbox.StatusDestroyed, e.row(second).status)
	require.Equal(t, ptr(third), e.threadSandbox(e.thread))
	require.Contains(t, e.logs.String(), "old_sandbox_id="+second)
	require.Equal(t, 3, e.count(e.thread))
}

func TestManagerConfigValidate(t *testing.T) {
	t.Parallel()
	for _, cfg := range []sandbox.ManagerConfig{
		{},
		{Owner: "w", LeaseTTL: time.Millisecond},
		{Owner: "w", IdleTimeout: -time.Second},
		{Owner: "w", LeaseWait: -time.Second},
	} {
		_, err := sandbox.NewManager(nil, &genProvider{}, cfg, slog.New(slog.DiscardHandler))
		require.Error(t, err, "%+v", cfg)
	}
	_, err := sandbox.NewManager(nil, nil, sandbox.ManagerConfig{Owner: "w"}, slog.New(slog.DiscardHandler))
	require.Error(t, err)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
