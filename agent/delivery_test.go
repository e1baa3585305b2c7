package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// The vault can create signing secrets (the service checks at first need).
var _ agent.SecretWriter = (*secrets.Vault)(nil)

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t"
	body := `{"delivery_id":"d","event":"run.completed"}`
	now := time.Now().Unix()
	ts := strconv.FormatInt(now, 10)
	sig := agent.SignWebhook(secret, now, []byte(body))
	require.Regexp(t, `^v1=[0-9a-f]{64}$`, sig)

	tests := []struct {
		name                    string
		secret, ts, body, head  string
		tolerance               time.Duration
		wantSig, wantTS, wantOK bool
	}{
		{name: "valid", secret: secret, ts: ts, body: body, head: sig, wantOK: true},
		{name: "one of several entries", secret: secret, ts: ts, body: body, head: "v0=abc, v1=00ff," + sig, wantOK: true},
		{name: "tampered body", secret: secret, ts: ts, body: body + " ", head: sig, wantSig: true},
		{name: "tampered timestamp", secret: secret, ts: strconv.FormatInt(now+1, 10), body: body, head: sig, wantSig: true},
		{name: "wrong secret", secret: "other", ts: ts, body: body, head: sig, wantSig: true},
		{name: "empty secret", secret: "", ts: ts, body: body, head: sig, wantSig: true},
		{name: "no signature", secret: secret, ts: ts, body: body, head: "", wantSig: true},
		{name: "upper-case scheme", secret: secret, ts: ts, body: body, head: strings.ToUpper(sig), wantSig: true},
		{name: "malformed timestamp", secret: secret, ts: "+" + ts, body: body, head: sig, wantTS: true},
		{name: "stale", secret: secret, ts: strconv.FormatInt(now-600, 10), body: body,
			head: agent.SignWebhook(secret, now-600, []byte(body)), wantTS: true},
		{name: "stale but tolerance off", secret: secret, ts: strconv.FormatInt(now-600, 10), body: body,
			head: agent.SignWebhook(secret, now-600, []byte(body)), tolerance: -1, wantOK: true},
		{name: "future", secret: secret, ts: strconv.FormatInt(now+600, 10), body: body,
			head: agent.SignWebhook(secret, now+600, []byte(body)), tolerance: time.Minute, wantTS: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := agent.VerifyWebhookSignature(tc.secret, tc.ts, tc.body, tc.head, tc.tolerance)
			switch {
			case tc.wantOK:
				require.NoError(t, err)
			case tc.wantSig:
				require.ErrorIs(t, err, agent.ErrWebhookSignature)
			case tc.wantTS:
				require.ErrorIs(t, err, agent.ErrWebhookTimestamp)
			}
		})
	}
}

// FuzzVerifyWebhookSignature: verification never panics, accepts what
// SignWebhook produced for the same inputs and rejects any other body.
func FuzzVerifyWebhookSignature(f *testing.F) {
	f.Add("secret", int64(1700000000), "{}", "v1=00", "x")
	f.Add("", int64(0), "", "", "")
	f.Add("k", int64(-5), "body\x00", "v1=,v1=zz, ,", "body")
	f.Fuzz(func(t *testing.T, secret string, ts int64, body, header, other string) {
		stamp := strconv.FormatInt(ts, 10)
		_ = agent.VerifyWebhookSignature(secret, stamp, body, header, -1)
		_ = agent.VerifyWebhookSignature(secret, header, body, header, 0)
		sig := agent.SignWebhook(secret, ts, []byte(body))
		err := agent.VerifyWebhookSignature(secret, stamp, body, sig, -1)
		if secret != "" && ts >= 0 && len(stamp) <= 18 {
			require.NoError(t, err)
		} else {
			require.Error(t, err)
		}
		if other != body {
			require.Error(t, agent.VerifyWebhookSignature(secret, stamp, other, sig, -1))
		}
	})
}

func TestValidateWebhookURL(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://example.com/hooks/agentplane?k=1": true,
		"https://hooks.example.com:8443/x":         true,
		"http://localhost:8080/hook":               true,
		"http://127.0.0.1:9/hook":                  true,
		"http://[::1]:9/hook":                      true,
		"http://example.com/hook":                  false,
		"http://10.0.0.1/hook":                     false,
		"ftp://example.com/x":                      false,
		"https://user:pw@example.com/x":            false,
		"https://token@example.com/x":              false,
		"/relative/path":                           false,
		"https://":                                 false,
		"mailto:a@example.com":                     false,
		"https://example.com/" + strings.Repeat("a", agent.MaxWebhookURLBytes): false,
		"https://exa mple.com/": false,
	} {
		err := agent.ValidateWebhookURL(raw)
		if ok {
			require.NoError(t, err, raw)
			continue
		}
		var inv *agent.InvalidError
		require.ErrorAs(t, err, &inv, raw)
		require.Equal(t, "webhook_url", inv.Field)
	}
}

func TestDeliveryBackoff(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	w := &agent.DeliverWorker{Service: e.svc}
	at := func(n int) time.Duration {
		return time.Until(w.NextRetry(&river.Job[agent.DeliverArgs]{JobRow: &rivertype.JobRow{Attempt: n}}))
	}
	for range 20 {
		require.InDelta(t, float64(10*time.Second), float64(at(1)), float64(2*time.Second)+float64(50*time.Millisecond))
		require.InDelta(t, float64(80*time.Second), float64(at(4)), float64(16*time.Second)+float64(50*time.Millisecond))
		require.LessOrEqual(t, at(11), time.Hour)
		require.LessOrEqual(t, at(64), time.Hour)
		require.Greater(t, at(64), 47*time.Minute)
	}
}

// receiver is a webhook endpoint that answers with the next scripted
// status (the last one forever) and keeps what it got.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   []string
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	rc := &receiver{statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.got, rc.bodies = append(rc.got, r), append(rc.bodies, string(b))
		status := rc.statuses[min(len(rc.got), len(rc.statuses))-1]
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.Repeat("x", 100<<10))) // more than is read
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// deliveryEnv is a run environment plus a delivering service whose vault
// can create signing secrets, worked through rivertest.
type deliveryEnv struct {
	*runEnv
	pool   *pgxpool.Pool
	vault  *secrets.Vault
	worker *rivertest.Worker[agent.DeliverArgs, pgx.Tx]
	tx     pgx.Tx
}

// fastDelivery retries at once and gives up after three attempts.
var fastDelivery = agent.DeliveryConfig{AllowPrivate: true, MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Timeout: 5 * time.Second}

func newDeliveryEnv(t *testing.T, cfg agent.DeliveryConfig) *deliveryEnv {
	t.Helper()
	e := newRunEnv(t)
	require.NoError(t, e.svc.UseDelivery(cfg))
	// Its own pool: each rivertest attempt holds a connection for its
	// transaction while the worker uses others.
	pcfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	require.NoError(t, err)
	pcfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(t.Context(), pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	vault, err := secrets.NewVault(pool, key, nil)
	require.NoError(t, err)
	deliverer, err := agent.NewService(pool, agent.Config{}, vault, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, deliverer.UseDelivery(cfg))
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, river.Worker[agent.DeliverArgs](&agent.DeliverWorker{Service: deliverer}))
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) })
	return &deliveryEnv{runEnv: e, pool: pool, vault: vault, worker: w, tx: tx}
}

// finishRun creates a run with a webhook URL ("" for the agent's) and
// executes it; the model answers answer.
func (d *deliveryEnv) finishRun(webhook, answer string) agent.Run {
	d.t.Helper()
	d.model.Enqueue(llmtest.Reply{Content: answer, Usage: &llm.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}})
	r, _, err := d.svc.CreateRun(d.t.Context(), d.access, d.thread.ID, agent.CreateRunInput{
		Input: "go", WebhookURL: webhook, Metadata: map[string]any{"ticket": "T-9"},
	})
	require.NoError(d.t, err)
	require.NoError(d.t, d.svc.Execute(d.t.Context(), agent.RunArgs{TenantID: r.TenantID, RunID: r.ID}))
	r, err = d.svc.GetRun(d.t.Context(), d.access, r.ID)
	require.NoError(d.t, err)
	require.True(d.t, r.Terminal())
	return r
}

func (d *deliveryEnv) deliveries(run uuid.UUID) []agent.Delivery {
	d.t.Helper()
	ds, err := d.svc.ListDeliveries(d.t.Context(), d.access, run)
	require.NoError(d.t, err)
	return ds
}

// job is the River job of a delivery, as finish enqueued it.
func (d *deliveryEnv) job(delivery uuid.UUID) *rivertype.JobRow {
	d.t.Helper()
	var id int64
	require.NoError(d.t, pgtest.Pool(d.t).QueryRow(d.t.Context(),
		`SELECT id FROM river_job WHERE kind = 'agent.deliver' AND args->>'delivery_id' = $1`, delivery.String()).Scan(&id))
	j, err := d.queue.JobGet(d.t.Context(), id)
	require.NoError(d.t, err)
	return j
}

// work makes one attempt of job as River would, and returns the job after it.
func (d *deliveryEnv) work(job *rivertype.JobRow) *rivertest.WorkResult {
	d.t.Helper()
	res, err := d.worker.WorkJob(d.t.Context(), d.t, d.tx, job)
	require.NotNil(d.t, res, "work: %v", err)
	if res.EventKind == river.EventKindJobCompleted {
		require.NoError(d.t, err)
	}
	return res
}

// duplicate works a second job for the delivery; it must complete.
func (d *deliveryEnv) duplicate(del agent.Delivery) {
	d.t.Helper()
	res, err := d.worker.Work(d.t.Context(), d.t, d.tx, agent.DeliverArgs{TenantID: del.TenantID, DeliveryID: del.ID}, nil)
	require.NoError(d.t, err)
	require.Equal(d.t, river.EventKindJobCompleted, res.EventKind)
}

func TestDeliveryRetriesUntilDelivered(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, agent.DeliveryConfig{AllowPrivate: true, MaxAttempts: 12, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK)
	run := d.finishRun(rc.srv.URL+"/hook?k=1", "The answer is 42.")
	require.Equal(t, agent.StatusSucceeded, run.Status, run.Error)
	require.Equal(t, rc.srv.URL+"/hook?k=1", run.WebhookURL)

	ds := d.deliveries(run.ID)
	require.Len(t, ds, 1)
	require.Equal(t, agent.DeliveryPending, ds[0].Status)
	require.Empty(t, ds[0].Attempts)
	require.Equal(t, byte(7), ds[0].ID[6]>>4, "delivery ids are UUIDv7")
	job := d.job(ds[0].ID)
	require.Equal(t, 12, job.MaxAttempts)

	res := d.work(job)
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	res = d.work(res.Job)
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	res = d.work(res.Job)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, 3, rc.count())

	got := d.deliveries(run.ID)[0]
	require.Equal(t, agent.DeliveryDelivered, got.Status)
	require.NotNil(t, got.DeliveredAt)
	require.Equal(t, 200, *got.LastStatusCode)
	require.Len(t, got.Attempts, 3)
	for i, a := range got.Attempts {
		require.Equal(t, i+1, a.Attempt)
		require.Equal(t, []int{500, 500, 200}[i], *a.StatusCode)
	}
	require.Contains(t, got.Attempts[0].Error, "500")
	require.Empty(t, got.Attempts[2].Error)

	secret, err := d.vault.Reveal(t.Context(), d.access.Tenant.ID, agent.WebhookSecretName)
	require.NoError(t, err, "the signing secret is created on first need")
	require.Regexp(t, `^[0-9a-f]{64}$`, secret)
	for i, r := range rc.got {
		require.Equal(t, got.ID.String(), r.Header.Get(agent.HeaderWebhookDelivery), "same delivery id on every attempt")
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.NoError(t, agent.VerifyWebhookSignature(secret, r.Header.Get(agent.HeaderWebhookTimestamp), rc.bodies[i], r.Header.Get(agent.HeaderWebhookSignature), time.Minute))
		require.Equal(t, "1", r.URL.Query().Get("k"))
	}
	require.Equal(t, rc.bodies[0], rc.bodies[2], "every attempt sends the same body")
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(rc.bodies[0]), &p))
	require.Equal(t, got.ID.String(), p["delivery_id"])
	require.Equal(t, "run.completed", p["event"])
	require.Equal(t, "The answer is 42.", p["final_message"])
	pr := p["run"].(map[string]any)
	require.Equal(t, run.ID.String(), pr["id"])
	require.Equal(t, run.ThreadID.String(), pr["thread_id"])
	require.Equal(t, "default", pr["agent"])
	require.Equal(t, "succeeded", pr["status"])
	require.Equal(t, "end_turn", pr["stop_reason"])
	require.Equal(t, "T-9", pr["metadata"].(map[string]any)["ticket"])
	require.EqualValues(t, 7, pr["usage"].(map[string]any)["total_tokens"])

	// A duplicate job sends nothing.
	d.duplicate(got)
	require.Equal(t, 3, rc.count())
	require.Len(t, d.deliveries(run.ID)[0].Attempts, 3)
}

func TestDeliveryFailsAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	rc := newReceiver(t, http.StatusServiceUnavailable)
	run := d.finishRun(rc.srv.URL, "ok")
	del := d.deliveries(run.ID)[0]
	job := d.job(del.ID)
	require.Equal(t, 3, job.MaxAttempts)

	res := d.work(job)
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	require.Equal(t, rivertype.JobStateAvailable, res.Job.State, "a retry due within the scheduler interval is available at once")
	res = d.work(res.Job)
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	res = d.work(res.Job)
	require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
	require.Len(t, res.Job.Errors, 3)

	got := d.deliveries(run.ID)[0]
	require.Equal(t, agent.DeliveryFailed, got.Status)
	require.Nil(t, got.DeliveredAt)
	require.Len(t, got.Attempts, 3)
	require.Equal(t, 503, *got.LastStatusCode)
	require.Contains(t, got.LastError, "503")

	d.duplicate(got) // a failed delivery is not sent again
	require.Equal(t, 3, rc.count())
}

func TestDeliveryRecordsNetworkErrors(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	rc := newReceiver(t, http.StatusOK)
	url := rc.srv.URL
	rc.srv.Close() // nothing listens any more
	run := d.finishRun(url, "ok")
	res := d.work(d.job(d.deliveries(run.ID)[0].ID))
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	got := d.deliveries(run.ID)[0]
	require.Equal(t, agent.DeliveryPending, got.Status)
	require.Len(t, got.Attempts, 1)
	require.Nil(t, got.Attempts[0].StatusCode)
	require.Contains(t, got.Attempts[0].Error, "connect")
	require.NotContains(t, got.Attempts[0].Error, url, "the URL is not repeated in the error")
}

// Without AllowPrivate (production's default), a webhook cannot reach the
// platform's own network: the connection to a loopback receiver is refused
// at dial time and nothing is POSTed.
func TestDeliveryRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	cfg := fastDelivery
	cfg.AllowPrivate = false
	d := newDeliveryEnv(t, cfg)
	rc := newReceiver(t, http.StatusOK)
	run := d.finishRun(rc.srv.URL, "ok")
	res := d.work(d.job(d.deliveries(run.ID)[0].ID))
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	require.Zero(t, rc.count(), "no request reached the private receiver")
	got := d.deliveries(run.ID)[0]
	require.Len(t, got.Attempts, 1)
	require.Contains(t, got.Attempts[0].Error, "private")
}

func TestDeliveryDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	target := newReceiver(t, http.StatusOK)
	redirect := httptest.NewServer(http.RedirectHandler(target.srv.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	run := d.finishRun(redirect.URL, "ok")
	res := d.work(d.job(d.deliveries(run.ID)[0].ID))
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	require.Zero(t, target.count())
	require.Equal(t, 307, *d.deliveries(run.ID)[0].Attempts[0].StatusCode)
}

func TestRunWithoutWebhookHasNoDelivery(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	run := d.finishRun("", "ok")
	require.Empty(t, run.WebhookURL)
	require.Empty(t, d.deliveries(run.ID))
	var n int
	require.NoError(t, pgtest.Pool(t).QueryRow(t.Context(),
		`SELECT count(*) FROM deliveries WHERE tenant_id = $1`, d.access.Tenant.ID).Scan(&n))
	require.Zero(t, n)
}

func TestAgentWebhookIsTheDefault(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	ctx := t.Context()
	hook := "https://hooks.example.com/agent"
	sys := tenants.Access{Principal: policy.System, Tenant: d.access.Tenant}
	_, err := d.svc.UpdateAgent(ctx, sys, agent.DefaultAgentName, agent.AgentPatch{WebhookURL: &hook})
	require.NoError(t, err)
	ag, err := d.svc.GetAgent(ctx, d.access, agent.DefaultAgentName)
	require.NoError(t, err)
	require.Equal(t, hook, *ag.WebhookURL)

	r, _, err := d.svc.CreateRun(ctx, d.access, d.thread.ID, agent.CreateRunInput{Input: "a"})
	require.NoError(t, err)
	require.Equal(t, hook, r.WebhookURL, "the agent's webhook is the default")
	own := "https://own.example.com/x"
	r, _, err = d.svc.CreateRun(ctx, d.access, d.thread.ID, agent.CreateRunInput{Input: "b", WebhookURL: own})
	require.NoError(t, err)
	require.Equal(t, own, r.WebhookURL, "the run's own webhook wins")

	bad := "http://example.com/x"
	_, err = d.svc.UpdateAgent(ctx, sys, agent.DefaultAgentName, agent.AgentPatch{WebhookURL: &bad})
	var inv *agent.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "webhook_url", inv.Field)
	none := ""
	ag, err = d.svc.UpdateAgent(ctx, sys, agent.DefaultAgentName, agent.AgentPatch{WebhookURL: &none})
	require.NoError(t, err)
	require.Nil(t, ag.WebhookURL)
}

func TestCreateRunRejectsBadWebhook(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	for _, u := range []string{"http://example.com/x", "https://u:p@example.com/", "not a url"} {
		_, _, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, agent.CreateRunInput{Input: "x", WebhookURL: u})
		var inv *agent.InvalidError
		require.ErrorAs(t, err, &inv, u)
		require.Equal(t, "webhook_url", inv.Field)
	}
	// The webhook is part of an idempotent request.
	in := agent.CreateRunInput{Input: "x", IdempotencyKey: "k1", WebhookURL: "https://a.example.com/"}
	_, _, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, in)
	require.NoError(t, err)
	in.WebhookURL = "https://b.example.com/"
	_, _, err = e.svc.CreateRun(t.Context(), e.access, e.thread.ID, in)
	var cf *agent.ConflictError
	require.ErrorAs(t, err, &cf)
}

func TestCancelledQueuedRunIsDelivered(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	rc := newReceiver(t, http.StatusNoContent)
	r, _, err := d.svc.CreateRun(t.Context(), d.access, d.thread.ID, agent.CreateRunInput{Input: "x", WebhookURL: rc.srv.URL})
	require.NoError(t, err)
	_, err = d.svc.CancelRun(t.Context(), d.access, r.ID)
	require.NoError(t, err)
	ds := d.deliveries(r.ID)
	require.Len(t, ds, 1)
	res := d.work(d.job(ds[0].ID))
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	var p agent.WebhookPayload
	require.NoError(t, json.Unmarshal([]byte(rc.bodies[0]), &p))
	require.Equal(t, agent.StatusCancelled, p.Run.Status)
	require.Empty(t, p.FinalMessage)
}

func TestDeliveriesAreTenantScoped(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	other := newRunEnv(t)
	run := d.finishRun("https://hooks.example.com/x", "ok")
	require.Len(t, d.deliveries(run.ID), 1)
	_, err := d.svc.ListDeliveries(t.Context(), other.access, run.ID)
	var nf *agent.NotFoundError
	require.ErrorAs(t, err, &nf)
}

// Concurrent first deliveries of a tenant create one signing secret.
func TestSigningSecretCreatedOnce(t *testing.T) {
	t.Parallel()
	d := newDeliveryEnv(t, fastDelivery)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	var jobs []*rivertype.JobRow
	for range 4 {
		run := d.finishRun(srv.URL, "ok")
		jobs = append(jobs, d.job(d.deliveries(run.ID)[0].ID))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		wg.Go(func() {
			tx, err := d.pool.Begin(t.Context())
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = tx.Rollback(t.Context()) }()
			if _, err := d.worker.WorkJob(t.Context(), t, tx, j); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 4, hits.Load())
	page, err := d.vault.List(t.Context(), tenants.Access{Principal: policy.System, Tenant: d.access.Tenant}, tenants.Page{})
	require.NoError(t, err)
	require.Len(t, page.Secrets, 1)
	require.Equal(t, 1, page.Secrets[0].Version)
}
