package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/tenants"
)

// TestSessionSweepDeletesExpiredSessions runs the product runtime (jobs.New,
// Work: true) and proves the registered sweep worker deletes expired sessions
// only, and that the log middleware wraps it.
func TestSessionSweepDeletesExpiredSessions(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := t.Context()

	userID := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO users (id, email) VALUES ($1, $2)`, userID, "sweep-"+pgtest.Suffix()+"@example.com")
	require.NoError(t, err)
	expired, live := []byte("expired-"+pgtest.Suffix()), []byte("live-"+pgtest.Suffix())
	_, err = pool.Exec(ctx, `
		INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at)
		VALUES ($1, $3, 'csrf-a', now() - interval '1 minute'),
		       ($2, $3, 'csrf-b', now() + interval '1 hour')`, expired, live, userID)
	require.NoError(t, err)

	svc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	logs := &logBuffer{}
	rt, err := New(pool, Config{Work: true, Workers: 2, StopTimeout: 5 * time.Second},
		Services{Tenants: svc}, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)

	res, err := rt.Client.Insert(ctx, tenants.SessionSweepArgs{}, nil)
	require.NoError(t, err)
	require.NoError(t, rt.Start(ctx))
	t.Cleanup(func() { require.NoError(t, rt.Stop(context.Background())) })

	waitFor(t, 20*time.Second, "sweep job completed", func() bool {
		job, err := rt.Client.JobGet(ctx, res.Job.ID)
		require.NoError(t, err)
		return job.State == rivertype.JobStateCompleted
	})
	require.False(t, sessionExists(t, pool, expired), "expired session survived the sweep")
	require.True(t, sessionExists(t, pool, live), "live session was swept")

	done, ok := logs.find(t, "job done", func(l map[string]any) bool {
		return l["job_id"] == float64(res.Job.ID)
	})
	require.True(t, ok, "no job done line for job %d", res.Job.ID)
	require.Equal(t, "tenants.session_sweep", done["job_kind"])
	require.Equal(t, float64(1), done["attempt"])
	require.NotContains(t, done, "tenant_id", "the sweep is not tenant-scoped")
	require.Contains(t, done, "took")
}

func sessionExists(t *testing.T, pool *pgxpool.Pool, hash []byte) bool {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM sessions WHERE token_hash = $1`, hash).Scan(&n))
	return n == 1
}

// TestRuntimeWithoutWorkInsertsOnly is the api role: the client inserts jobs
// but Start and Stop do nothing and no job is worked.
func TestRuntimeWithoutWorkInsertsOnly(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	rt, err := New(pool, Config{}, Services{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, rt.Start(t.Context()))
	queue := "test_insert_" + pgtest.Suffix()
	res, err := rt.Client.Insert(t.Context(), tenants.SessionSweepArgs{}, &river.InsertOpts{Queue: queue})
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateAvailable, res.Job.State)
	require.NoError(t, rt.Stop(t.Context()))
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	require.Equal(t, 20, c.Workers)
	require.Equal(t, 20*time.Second, c.StopTimeout)
	require.False(t, c.Work)
	require.NoError(t, c.Validate())

	for _, n := range []int{-1, 10_001} {
		require.ErrorContains(t, Config{Workers: n}.Validate(), "workers")
		_, err := New(pgtest.Pool(t), Config{Workers: n}, Services{}, slog.New(slog.DiscardHandler))
		require.ErrorContains(t, err, "workers")
	}
}
