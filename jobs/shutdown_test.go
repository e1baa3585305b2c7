package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/internal/pgtest"
)

// blockArgs is a test-only job that runs until released or cancelled.
type blockArgs struct{}

func (blockArgs) Kind() string { return "test.block" }

// blockWorker reports each start and then waits for release or its ctx. It
// returns ctx.Err() so a job whose ctx was cancelled never counts as done,
// even if it was released at the same moment.
type blockWorker struct {
	river.WorkerDefaults[blockArgs]
	started chan int64
	release chan struct{}
}

func newBlockWorker() *blockWorker {
	return &blockWorker{started: make(chan int64, 10), release: make(chan struct{})}
}

func (w *blockWorker) Work(ctx context.Context, job *river.Job[blockArgs]) error {
	w.started <- job.ID
	select {
	case <-ctx.Done():
	case <-w.release:
	}
	return ctx.Err()
}

// testRuntime wraps a River client that works only a private queue (so it
// never takes the product's jobs, nor they its) in a Runtime with the
// product's middleware and Start/Stop logic.
func testRuntime(t *testing.T, pool *pgxpool.Pool, queue string, w *blockWorker, stopTimeout time.Duration, logger *slog.Logger) *Runtime {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:     logger,
		Workers:    workers,
		Queues:     map[string]river.QueueConfig{queue: {MaxWorkers: 2}},
		Middleware: []rivertype.Middleware{&logMiddleware{logger: logger}},
	})
	require.NoError(t, err)
	return &Runtime{Client: client, cfg: Config{Workers: 2, Work: true, StopTimeout: stopTimeout}}
}

// insertAndAwait inserts a block job and waits until the worker holds it.
func insertAndAwait(t *testing.T, rt *Runtime, queue string, w *blockWorker) int64 {
	t.Helper()
	res, err := rt.Client.Insert(t.Context(), blockArgs{}, &river.InsertOpts{Queue: queue, MaxAttempts: 5})
	require.NoError(t, err)
	select {
	case id := <-w.started:
		require.Equal(t, res.Job.ID, id)
	case <-time.After(20 * time.Second):
		t.Fatal("job was not started")
	}
	return res.Job.ID
}

func jobState(t *testing.T, c *river.Client[pgx.Tx], id int64) *rivertype.JobRow {
	t.Helper()
	job, err := c.JobGet(context.Background(), id)
	require.NoError(t, err)
	return job
}

// TestStopDrainsInFlightJobs: cancelling the Start context (what SIGTERM
// does to serve's ctx) must not cancel running jobs; Stop waits for them.
func TestStopDrainsInFlightJobs(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	queue := "test_drain_" + pgtest.Suffix()
	w := newBlockWorker()
	rt := testRuntime(t, pool, queue, w, 30*time.Second, slog.New(slog.DiscardHandler))

	startCtx, cancelStart := context.WithCancel(t.Context())
	require.NoError(t, rt.Start(startCtx))
	id := insertAndAwait(t, rt, queue, w)

	cancelStart()
	stopped := make(chan error, 1)
	go func() { stopped <- rt.Stop(context.Background()) }()

	require.Equal(t, rivertype.JobStateRunning, jobState(t, rt.Client, id).State)
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a job was still running", err)
	default:
	}
	close(w.release)

	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return after the job finished")
	}
	job := jobState(t, rt.Client, id)
	require.Equal(t, rivertype.JobStateCompleted, job.State, "the in-flight job must finish, not be cancelled")
	require.Empty(t, job.Errors)
}

// TestStopCancelsJobsAfterTimeout: a job outliving StopTimeout is cancelled
// and released for retry, and another worker then completes it. It also
// checks that nothing the runtime started outlives Stop.
func TestStopCancelsJobsAfterTimeout(t *testing.T) {
	// Not parallel: goleak must not see other tests' goroutines.
	pgtest.URL(t) // create the package's shared pool before the snapshot
	ignore := goleak.IgnoreCurrent()

	pool, err := pgxpool.New(t.Context(), pgtest.URL(t))
	require.NoError(t, err)
	defer pool.Close()

	const stopTimeout = 500 * time.Millisecond
	queue := "test_cancel_" + pgtest.Suffix()
	logs := &logBuffer{}
	w := newBlockWorker()
	rt := testRuntime(t, pool, queue, w, stopTimeout, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, rt.Start(t.Context()))
	id := insertAndAwait(t, rt, queue, w)

	began := time.Now()
	require.NoError(t, rt.Stop(context.Background()))
	took := time.Since(began)
	require.GreaterOrEqual(t, took, stopTimeout, "Stop must wait StopTimeout before cancelling")
	require.Less(t, took, stopTimeout+8*time.Second, "Stop must not wait much past StopTimeout")

	job := jobState(t, rt.Client, id)
	require.Contains(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRetryable}, job.State,
		"a cancelled job must be released for retry, not left %s", job.State)
	failed, ok := logs.find(t, "job failed", func(l map[string]any) bool { return l["job_id"] == float64(id) })
	require.True(t, ok, "the middleware must log the cancelled job")
	require.Equal(t, "context canceled", failed["error"])

	// Another worker picks the released job up and finishes it.
	w2 := newBlockWorker()
	close(w2.release)
	rt2 := testRuntime(t, pool, queue, w2, 5*time.Second, slog.New(slog.DiscardHandler))
	require.NoError(t, rt2.Start(t.Context()))
	waitFor(t, 20*time.Second, "released job completed by another worker", func() bool {
		return jobState(t, rt2.Client, id).State == rivertype.JobStateCompleted
	})
	require.NoError(t, rt2.Stop(context.Background()))

	pool.Close()
	goleak.VerifyNone(t, ignore)
}
