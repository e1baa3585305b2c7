package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/jobs"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// Sizing of one benchmark iteration. A batch is large enough that River's
// fetch rhythm and the poll below average out, and small enough that
// -benchtime=1x finishes in seconds: each iteration creates runBatch runs
// and inserts runBatch no-op jobs whatever b.N is, so b.N counts batches
// and every metric is computed from the batches' own clocks.
const (
	runBatch     = 300
	runCreators  = 4 // goroutines calling CreateRun (and Insert for the baseline)
	donePoll     = 10 * time.Millisecond
	batchTimeout = 3 * time.Minute
	// noopFetchCooldown matches what jobs.New sets for a working process, so
	// the baseline runs on the same River fetch rhythm as the run queue.
	noopFetchCooldown = 20 * time.Millisecond
)

// BenchmarkRunThroughput measures runs per second end to end — CreateRun
// (run row, run.queued event and River job in one transaction) → the
// product's River runtime → RunWorker: claim, one model call answered with a
// tool call, the "noop" tool, a second model call answered "ok", persist,
// run.completed — against raw River no-op jobs per second, both in the same
// iteration on the same database and product pool (a default pgxpool, as
// pg.Open builds it: MaxConns max(4, NumCPU)). The model is llmtest at zero
// latency; every run has its own thread (runs of one thread are serialized
// by design).
//
// "2 workers' worth of concurrency" is read as jobs.Config{Workers: 2}: the
// runs queue has MaxWorkers 2, so at most two runs execute at once in the
// process; the baseline queue also has MaxWorkers 2 and the same
// FetchCooldown as jobs.New. workers=8 shows how both scale.
//
// Metrics (all from the batches, not ns/op, which is one batch of each):
// runs/s and noop-jobs/s (creation start → last one terminal, by a 10 ms
// poll), ratio = runs/s ÷ noop-jobs/s, p50-ms/p99-ms of created_at →
// finished_at (with a burst of 300 and 2 workers this is mostly queue
// wait), exec-p50-ms/exec-p99-ms of started_at → finished_at (one run's
// own time), noop-p50-ms of the jobs' created_at → finalized_at, and
// allocs/run: Go heap allocations of the whole process during the run
// phase ÷ runs, so it includes the API-side create, River, pgx, the worker
// and the llmtest server (noop-allocs/job is the same for the baseline);
// queries/run and noop-queries/job count statements on the product pool
// (BEGIN and COMMIT included) and pool-wait-ms/run is the time spent
// waiting for one of its connections. Correctness is checked (every run
// succeeded after two turns, every job completed); timings never are.
func BenchmarkRunThroughput(b *testing.B) {
	for _, workers := range []int{2, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e := newThroughputEnv(b, workers)
			e.warmUp(b)
			var runs, noops batchTotals
			for b.Loop() {
				b.StopTimer()
				threads := e.threads(b, runBatch)
				b.StartTimer()
				runs.add(e.runBatch(b, threads))
				noops.add(e.noopBatch(b, runBatch))
			}
			runsPerSec, noopsPerSec := runs.perSecond(), noops.perSecond()
			b.ReportMetric(runsPerSec, "runs/s")
			b.ReportMetric(noopsPerSec, "noop-jobs/s")
			b.ReportMetric(runsPerSec/noopsPerSec, "ratio")
			b.ReportMetric(latencyPercentile(runs.latencies, 0.50), "p50-ms")
			b.ReportMetric(latencyPercentile(runs.latencies, 0.99), "p99-ms")
			b.ReportMetric(latencyPercentile(runs.exec, 0.50), "exec-p50-ms")
			b.ReportMetric(latencyPercentile(runs.exec, 0.99), "exec-p99-ms")
			b.ReportMetric(latencyPercentile(noops.latencies, 0.50), "noop-p50-ms")
			b.ReportMetric(float64(runs.mallocs)/float64(runs.n), "allocs/run")
			b.ReportMetric(float64(noops.mallocs)/float64(noops.n), "noop-allocs/job")
			b.ReportMetric(runs.poolWait.Seconds()*1000/float64(runs.n), "pool-wait-ms/run")
			b.ReportMetric(float64(runs.queries)/float64(runs.n), "queries/run")
			b.ReportMetric(float64(noops.queries)/float64(noops.n), "noop-queries/job")
		})
	}
}

// throughputEnv is one tenant whose runs are worked by the product's River
// runtime, plus a bare River client working a private no-op queue.
type throughputEnv struct {
	// db is the product's pool: a default pgxpool on the package database,
	// as pg.Open builds it, with a statement counter. pool (pgtest's) is
	// the benchmark's own, for polling and checks, so they neither take
	// the product's connections nor count as its statements.
	db        *pgxpool.Pool
	queries   *queryCounter
	pool      *pgxpool.Pool
	svc       *agent.Service
	access    tenants.Access
	model     *llmtest.Server
	noop      *river.Client[pgx.Tx]
	noopQueue string
}

// noVault has no secrets; the bench model endpoint needs none.
type noVault struct{}

func (noVault) Reveal(context.Context, uuid.UUID, string) (string, error) {
	return "", &tenants.NotFoundError{Kind: "secret", Key: "any"}
}

func newThroughputEnv(b *testing.B, workers int) *throughputEnv {
	b.Helper()
	ctx := b.Context()
	logger := slog.New(slog.DiscardHandler)
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := pgxpool.ParseConfig(pgtest.URL(b))
	must(err)
	queries := &queryCounter{}
	cfg.ConnConfig.Tracer = queries
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	must(err)
	b.Cleanup(pool.Close) // registered first, so it runs after River stops

	tsvc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	must(err)
	svc, err := agent.NewService(pool, agent.Config{}, noVault{}, logger)
	must(err)
	model := toolThenOK(b)
	must(svc.UseRuntime(agent.Runtime{
		Models:       llm.New(llm.Config{}),
		Tools:        tools.NewRegistry(tools.Static{SourceName: "bench", List: []tools.Tool{noopTool()}}),
		Capabilities: policy.NewCapabilities(pool),
		Principals:   tsvc,
		Owner:        "bench-worker",
	}))
	rt, err := jobs.New(pool, jobs.Config{Work: true, Workers: workers}, jobs.Services{Tenants: tsvc, Agents: svc}, logger)
	must(err)
	svc.UseQueue(rt.Client)

	slug := "tput-" + pgtest.Suffix()
	tn, err := tsvc.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: slug, Name: slug})
	must(err)
	key, err := tsvc.CreateAPIKey(ctx, tenants.Access{Principal: policy.System, Tenant: tn}, tenants.CreateAPIKeyInput{Name: "dev", Role: policy.RoleDeveloper})
	must(err)
	p, err := tsvc.AuthenticateKey(ctx, key.Key)
	must(err)
	_, err = svc.CreateModel(ctx, tenants.Access{Principal: policy.System, Tenant: tn}, agent.ModelInput{
		Name: "scripted", BaseURL: model.URL(), Model: llmtest.DefaultModel,
	})
	must(err)

	queue := "bench_noop_" + pgtest.Suffix()
	w := river.NewWorkers()
	river.AddWorker(w, &noopJobWorker{})
	noop, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:        logger,
		Workers:       w,
		Queues:        map[string]river.QueueConfig{queue: {MaxWorkers: workers}},
		FetchCooldown: noopFetchCooldown,
	})
	must(err)

	must(rt.Start(ctx))
	b.Cleanup(func() {
		if err := rt.Stop(context.WithoutCancel(ctx)); err != nil {
			b.Error(err)
		}
	})
	must(noop.Start(ctx))
	b.Cleanup(func() {
		if err := noop.Stop(context.WithoutCancel(ctx)); err != nil {
			b.Error(err)
		}
	})
	return &throughputEnv{
		db: pool, queries: queries, pool: pgtest.Pool(b), svc: svc, model: model, noop: noop, noopQueue: queue,
		access: tenants.Access{Principal: p, Tenant: tn, Role: policy.RoleDeveloper},
	}
}

// toolThenOK is a scripted model that, for any number of concurrent runs,
// answers a user message with a call to "noop" and a tool result with "ok".
func toolThenOK(b *testing.B) *llmtest.Server {
	b.Helper()
	m := llmtest.Start(b)
	m.DisableRecording()
	m.AddRule(llmtest.Rule{
		Match: func(req llmtest.ChatRequest) bool { return req.Last().Role == llm.RoleUser },
		Reply: llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "noop", Arguments: "{}"}}},
	})
	m.AddRule(llmtest.Rule{
		Match: func(req llmtest.ChatRequest) bool { return req.Last().Role == llm.RoleTool },
		Reply: llmtest.Reply{Content: "ok"},
	})
	return m
}

func noopTool() tools.Tool {
	return tools.Tool{
		Name: "noop", Description: "Do nothing and say ok.", Group: "bench",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Run:        func(context.Context, tools.Call) (string, error) { return "ok", nil },
	}
}

type noopJobArgs struct{}

func (noopJobArgs) Kind() string { return "bench.noop" }

type noopJobWorker struct {
	river.WorkerDefaults[noopJobArgs]
}

func (*noopJobWorker) Work(context.Context, *river.Job[noopJobArgs]) error { return nil }

// warmUp pushes a few runs and jobs through (creating the default agent,
// opening model and pool connections, loading code paths) before timing.
func (e *throughputEnv) warmUp(b *testing.B) {
	b.Helper()
	e.runBatch(b, e.threads(b, 8))
	e.noopBatch(b, 8)
}

// threads creates n empty threads, one per run of the next batch.
func (e *throughputEnv) threads(b *testing.B, n int) []uuid.UUID {
	b.Helper()
	ids := make([]uuid.UUID, n)
	fanOut(b, n, func(i int) error {
		th, err := e.svc.CreateThread(b.Context(), e.access, "bench")
		ids[i] = th.ID
		return err
	})
	return ids
}

// batch is one timed phase: n items took elapsed, with per-item latencies
// in milliseconds and the process's heap allocations meanwhile.
type batch struct {
	n         int
	elapsed   time.Duration
	latencies []float64
	exec      []float64
	mallocs   uint64
	poolWait  time.Duration // time spent waiting for a free product pool connection
	queries   int64         // statements on the product pool, BEGIN and COMMIT included
}

type batchTotals batch

func (t *batchTotals) add(b batch) {
	t.n += b.n
	t.elapsed += b.elapsed
	t.latencies = append(t.latencies, b.latencies...)
	t.exec = append(t.exec, b.exec...)
	t.mallocs += b.mallocs
	t.poolWait += b.poolWait
	t.queries += b.queries
}

func (t *batchTotals) perSecond() float64 { return float64(t.n) / t.elapsed.Seconds() }

// runBatch creates one run on each thread through the service and waits
// until every one is terminal, then checks they all succeeded.
func (e *throughputEnv) runBatch(b *testing.B, threads []uuid.UUID) batch {
	b.Helper()
	ctx := b.Context()
	ids := make([]uuid.UUID, len(threads))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	waited, queried := e.db.Stat().EmptyAcquireWaitTime(), e.queries.n.Load()
	start := time.Now()
	fanOut(b, len(threads), func(i int) error {
		r, created, err := e.svc.CreateRun(ctx, e.access, threads[i], agent.CreateRunInput{Input: "call the noop tool"})
		if err == nil && !created {
			err = fmt.Errorf("run %s was not created", r.ID)
		}
		ids[i] = r.ID
		return err
	})
	// Only this batch's runs can be active in the tenant (each batch ends
	// with all terminal), so "none active" is "all of the batch done".
	e.await(b, "runs", func() (int, error) {
		var active int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM runs
			WHERE tenant_id = $1 AND status IN ('queued', 'running')`, e.access.Tenant.ID).Scan(&active)
		return active, err
	})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	e.checkRuns(b, ids)

	out := batch{
		n: len(ids), elapsed: elapsed, mallocs: after.Mallocs - before.Mallocs,
		poolWait: e.db.Stat().EmptyAcquireWaitTime() - waited, queries: e.queries.n.Load() - queried,
	}
	rows, err := e.pool.Query(ctx, `SELECT
			extract(epoch FROM finished_at - created_at)::float8 * 1000,
			extract(epoch FROM finished_at - started_at)::float8 * 1000
		FROM runs WHERE tenant_id = $1 AND id = ANY($2)`, e.access.Tenant.ID, ids)
	if err != nil {
		b.Fatal(err)
	}
	var total, exec float64
	_, err = pgx.ForEachRow(rows, []any{&total, &exec}, func() error {
		out.latencies = append(out.latencies, total)
		out.exec = append(out.exec, exec)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// checkRuns fails the benchmark unless every run succeeded after the tool
// call and the answer (two turns).
func (e *throughputEnv) checkRuns(b *testing.B, ids []uuid.UUID) {
	b.Helper()
	var ok int
	var sample string
	err := e.pool.QueryRow(b.Context(), `SELECT
			count(*) FILTER (WHERE status = 'succeeded' AND turns = 2),
			coalesce(min(status || ' (turns ' || turns || '): ' || coalesce(error, ''))
				FILTER (WHERE status <> 'succeeded' OR turns <> 2), '')
		FROM runs WHERE tenant_id = $1 AND id = ANY($2)`, e.access.Tenant.ID, ids).Scan(&ok, &sample)
	if err != nil {
		b.Fatal(err)
	}
	if ok != len(ids) {
		b.Fatalf("%d of %d runs succeeded with two turns; e.g. %s", ok, len(ids), sample)
	}
}

// noopBatch inserts n no-op jobs, each in its own transaction from the same
// number of goroutines as runBatch, and waits until River has completed
// them all.
func (e *throughputEnv) noopBatch(b *testing.B, n int) batch {
	b.Helper()
	ctx := b.Context()
	ids := make([]int64, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	waited, queried := e.db.Stat().EmptyAcquireWaitTime(), e.queries.n.Load()
	start := time.Now()
	fanOut(b, n, func(i int) error {
		res, err := e.noop.Insert(ctx, noopJobArgs{}, &river.InsertOpts{Queue: e.noopQueue})
		if err == nil {
			ids[i] = res.Job.ID
		}
		return err
	})
	e.await(b, "no-op jobs", func() (int, error) {
		var active int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM river_job
			WHERE queue = $1 AND finalized_at IS NULL`, e.noopQueue).Scan(&active)
		return active, err
	})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	out := batch{
		n: n, elapsed: elapsed, mallocs: after.Mallocs - before.Mallocs,
		poolWait: e.db.Stat().EmptyAcquireWaitTime() - waited, queries: e.queries.n.Load() - queried,
	}
	rows, err := e.pool.Query(ctx, `SELECT state::text, extract(epoch FROM finalized_at - created_at)::float8 * 1000
		FROM river_job WHERE id = ANY($1)`, ids)
	if err != nil {
		b.Fatal(err)
	}
	var state string
	var ms float64
	_, err = pgx.ForEachRow(rows, []any{&state, &ms}, func() error {
		if state != "completed" {
			return fmt.Errorf("no-op job ended %s", state)
		}
		out.latencies = append(out.latencies, ms)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// await polls active (a cheap indexed count) every donePoll until it is 0.
func (e *throughputEnv) await(b *testing.B, what string, active func() (int, error)) {
	b.Helper()
	deadline := time.Now().Add(batchTimeout)
	for {
		n, err := active()
		if err != nil {
			b.Fatalf("count active %s: %v", what, err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %s, %d %s still not finished", batchTimeout, n, what)
		}
		time.Sleep(donePoll)
	}
}

// fanOut calls fn for 0..n-1 from runCreators goroutines and fails the
// benchmark (from its own goroutine) with the first error.
func fanOut(b *testing.B, n int, fn func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range runCreators {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// latencyPercentile is the nearest-rank percentile p (0..1) of ms.
func latencyPercentile(ms []float64, p float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// queryCounter counts the statements run on a pool.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (*queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
