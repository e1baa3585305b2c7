package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// Webhook delivery of run results (DESIGN §10). When a run with a webhook
// URL reaches a terminal status, the transaction that writes the status
// also inserts a pending delivery (its UUIDv7 id is the receiver's dedupe
// key) and a DeliverArgs job. The worker POSTs a WebhookPayload signed as
// SignWebhook describes, records every attempt, and retries with
// exponential backoff until a 2xx answer or MaxAttempts. A delivered (or
// failed) delivery is never sent again, however often its job runs; only
// two copies of its job running at the same moment could both send, which
// is why receivers deduplicate on the delivery id.

// Webhook header names and the vault secret that signs deliveries.
const (
	HeaderWebhookDelivery  = "X-Agentplane-Delivery"
	HeaderWebhookTimestamp = "X-Agentplane-Timestamp"
	HeaderWebhookSignature = "X-Agentplane-Signature"
	// WebhookSecretName names the tenant's signing secret in the vault. It
	// is created (32 random bytes, hex) on the first delivery that needs it;
	// PUT it to choose or rotate the value.
	WebhookSecretName = "WEBHOOK_SIGNING_SECRET"
	// MaxWebhookURLBytes bounds a webhook URL.
	MaxWebhookURLBytes = 2048
	// DefaultDeliveryMaxAttempts is how many POSTs a delivery gets unless
	// DeliveryConfig says otherwise.
	DefaultDeliveryMaxAttempts = 12
	// DefaultWebhookTolerance is the timestamp age VerifyWebhookSignature
	// accepts when given a zero tolerance.
	DefaultWebhookTolerance = 5 * time.Minute
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Verification failures; VerifyWebhookSignature wraps one of them.
var (
	ErrWebhookSignature = errors.New("webhook signature does not match")
	ErrWebhookTimestamp = errors.New("webhook timestamp is malformed or outside the tolerance")
)

// maxReceiverBody is how much of a receiver's answer is read (and dropped).
const maxReceiverBody = 64 << 10

// DeliveryConfig tunes webhook delivery; the zero value means the defaults.
type DeliveryConfig struct {
	// Timeout bounds one POST: connecting, sending and reading the answer.
	Timeout time.Duration
	// MaxAttempts is how many POSTs a delivery gets before it fails.
	MaxAttempts int
	// BaseBackoff is the wait after the first failed attempt; it doubles
	// with every further one, with ±20% jitter.
	BaseBackoff time.Duration
	// MaxBackoff caps the wait between two attempts.
	MaxBackoff time.Duration
	// AllowPrivate lets deliveries reach loopback and private-network
	// addresses (development, tests, receivers inside the platform's own
	// network). Off, a webhook URL cannot be used to probe internal
	// services: the address is checked when the connection is made, after
	// DNS, so a public name resolving to a private address is refused too.
	AllowPrivate bool
}

// WithDefaults fills unset fields: 10 s, 12 attempts, 10 s doubling to 1 h
// (about two and a half hours of retries in all).
func (c DeliveryConfig) WithDefaults() DeliveryConfig {
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultDeliveryMaxAttempts
	}
	if c.BaseBackoff == 0 {
		c.BaseBackoff = 10 * time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = time.Hour
	}
	return c
}

// Validate rejects settings that cannot work.
func (c DeliveryConfig) Validate() error {
	switch {
	case c.Timeout <= 0:
		return fmt.Errorf("delivery timeout %s: must be positive", c.Timeout)
	case c.MaxAttempts < 1 || c.MaxAttempts > 100:
		return fmt.Errorf("delivery max attempts %d: must be between 1 and 100", c.MaxAttempts)
	case c.BaseBackoff <= 0 || c.MaxBackoff < c.BaseBackoff:
		return fmt.Errorf("delivery backoff %s..%s: must be positive and ordered", c.BaseBackoff, c.MaxBackoff)
	}
	return nil
}

// backoff is the wait after failed attempt n (1-based): BaseBackoff·2^(n-1)
// with ±20% jitter, at most MaxBackoff.
func (c DeliveryConfig) backoff(n int) time.Duration {
	d := c.MaxBackoff
	if n < 1 {
		n = 1
	}
	if n <= 32 {
		if b := c.BaseBackoff << (n - 1); b > 0 && b < d {
			d = b
		}
	}
	d = d - d/5 + mrand.N(2*d/5+1)
	return min(d, c.MaxBackoff)
}

// UseDelivery sets the webhook delivery settings (wiring step; without it
// the defaults apply).
func (s *Service) UseDelivery(cfg DeliveryConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.delivery = cfg
	return nil
}

// SecretWriter stores a tenant secret in the caller's transaction. When the
// service's SecretReader implements it too (the vault does), a tenant's
// webhook signing secret is created on first need.
type SecretWriter interface {
	PutTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name, value string) (secrets.Metadata, error)
}

// WebhookPayload is the JSON body of a run result delivery; its names are
// part of the API.
type WebhookPayload struct {
	DeliveryID uuid.UUID  `json:"delivery_id"`
	Event      string     `json:"event"`
	Run        WebhookRun `json:"run"`
	// FinalMessage is the run's last assistant text ("" when none).
	FinalMessage string `json:"final_message"`
}

// WebhookRun is the run in a WebhookPayload.
type WebhookRun struct {
	ID         uuid.UUID       `json:"id"`
	ThreadID   uuid.UUID       `json:"thread_id"`
	Agent      string          `json:"agent"`
	Status     string          `json:"status"`
	StopReason string          `json:"stop_reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Metadata   json.RawMessage `json:"metadata"`
	Turns      int             `json:"turns"`
	Usage      WebhookUsage    `json:"usage"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	// Delivery is the run's settlement receipt, when one was written.
	Delivery *Receipt `json:"delivery,omitempty"`
}

// WebhookUsage totals a run's tokens.
type WebhookUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Delivery is one webhook delivery of a run's result.
type Delivery struct {
	ID, TenantID, RunID uuid.UUID
	URL                 string
	Status              string
	LastStatusCode      *int
	LastError           string
	CreatedAt           time.Time
	DeliveredAt         *time.Time
	// Attempts are the POSTs made so far, oldest first.
	Attempts []DeliveryAttempt
}

// DeliveryAttempt is one POST of a delivery.
type DeliveryAttempt struct {
	Attempt int
	// StatusCode is the receiver's answer; nil when none came.
	StatusCode *int
	Error      string
	Duration   time.Duration
	CreatedAt  time.Time
}

func deliveryFromRow(r agentdb.Delivery) Delivery {
	return Delivery{
		ID: r.ID, TenantID: r.TenantID, RunID: r.RunID, URL: r.Url, Status: r.Status,
		LastStatusCode: intPtr(r.LastStatusCode), LastError: deref0(r.LastError),
		CreatedAt: r.CreatedAt, DeliveredAt: r.DeliveredAt, Attempts: []DeliveryAttempt{},
	}
}

func intPtr(p *int32) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

func deref0(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ListDeliveries returns a run's deliveries with their attempts.
func (s *Service) ListDeliveries(ctx context.Context, a tenants.Access, runID uuid.UUID) ([]Delivery, error) {
	if _, err := s.GetRun(ctx, a, runID); err != nil {
		return nil, err
	}
	q := agentdb.New(s.pool)
	rows, err := q.ListRunDeliveries(ctx, agentdb.ListRunDeliveriesParams{TenantID: a.Tenant.ID, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("list deliveries of run %s: %w", runID, err)
	}
	attempts, err := q.ListRunDeliveryAttempts(ctx, agentdb.ListRunDeliveryAttemptsParams{TenantID: a.Tenant.ID, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("list delivery attempts of run %s: %w", runID, err)
	}
	out := make([]Delivery, len(rows))
	at := make(map[uuid.UUID]int, len(rows))
	for i, r := range rows {
		out[i], at[r.ID] = deliveryFromRow(r), i
	}
	for _, r := range attempts {
		d := &out[at[r.DeliveryID]]
		d.Attempts = append(d.Attempts, DeliveryAttempt{
			Attempt: int(r.Attempt), StatusCode: intPtr(r.StatusCode), Error: deref0(r.Error),
			Duration: time.Duration(r.DurationMs) * time.Millisecond, CreatedAt: r.CreatedAt,
		})
	}
	return out, nil
}

// DeliverArgs asks for one delivery's next attempt.
type DeliverArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
}

// Kind names the job in River.
func (DeliverArgs) Kind() string { return "agent.deliver" }

// InsertOpts bounds the attempts of a job inserted without options
// (enqueueDeliveryTx passes DeliveryConfig.MaxAttempts).
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: DefaultDeliveryMaxAttempts}
}

// enqueueDeliveryTx starts the delivery of a run that has just reached a
// terminal status, in the transaction that wrote the status.
func (s *Service) enqueueDeliveryTx(ctx context.Context, tx pgx.Tx, run agentdb.Run) error {
	if run.WebhookUrl == nil || *run.WebhookUrl == "" {
		return nil
	}
	if s.queue == nil {
		return errors.New("enqueue delivery: no job queue configured")
	}
	row, err := agentdb.New(tx).CreateDelivery(ctx, agentdb.CreateDeliveryParams{
		TenantID: run.TenantID, ID: uuid.Must(uuid.NewV7()), RunID: run.ID, Url: *run.WebhookUrl,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // enqueued before
	}
	if err != nil {
		return fmt.Errorf("create delivery for run %s: %w", run.ID, err)
	}
	opts := &river.InsertOpts{MaxAttempts: s.delivery.WithDefaults().MaxAttempts}
	if _, err := s.queue.InsertTx(ctx, tx, DeliverArgs{TenantID: row.TenantID, DeliveryID: row.ID}, opts); err != nil {
		return fmt.Errorf("enqueue delivery %s: %w", row.ID, err)
	}
	return nil
}

// DeliverWorker POSTs run results to webhooks.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	Service *Service

	once   sync.Once
	client *http.Client
}

// NextRetry backs off exponentially with jitter (DeliveryConfig.backoff).
func (w *DeliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return time.Now().Add(w.Service.delivery.WithDefaults().backoff(job.Attempt))
}

// Timeout leaves the POST its own timeout and room for the bookkeeping.
func (w *DeliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return w.Service.delivery.WithDefaults().Timeout + 30*time.Second
}

// Work makes one attempt; an error makes River retry (or, after the last
// attempt, discard the job, with the delivery marked failed).
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	w.once.Do(func() {
		cfg := w.Service.delivery.WithDefaults()
		w.client = webhookClient(cfg.Timeout, cfg.AllowPrivate)
	})
	return w.Service.deliver(ctx, w.client, job.Args, job.Attempt >= job.MaxAttempts)
}

// webhookClient follows no redirects and refuses link-local, multicast and
// unspecified addresses (cloud metadata endpoints among them), and unless
// allowPrivate also loopback and private-network addresses.
func webhookClient(timeout time.Duration, allowPrivate bool) *http.Client {
	control := func(network, address string, c syscall.RawConn) error {
		return refuseSpecialAddress(network, address, c, allowPrivate)
	}
	dialer := &net.Dialer{Timeout: timeout, Control: control}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	return &http.Client{
		Timeout:       timeout,
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func refuseSpecialAddress(_, address string, _ syscall.RawConn, allowPrivate bool) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return fmt.Errorf("webhook address %s is not allowed", ip)
	}
	if !allowPrivate && (ip.IsLoopback() || ip.IsPrivate() || sharedAddressSpace.Contains(ip.Unmap())) {
		return fmt.Errorf("webhook address %s is private; deliveries go to public addresses only", ip)
	}
	return nil
}

// sharedAddressSpace is RFC 6598's carrier-grade NAT range, private in
// practice though netip does not call it so.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// attempt is one POST's outcome.
type attempt struct {
	code int
	err  string
	took time.Duration
}

func (a attempt) ok() bool { return a.code >= 200 && a.code < 300 }

// deliver makes one attempt of a pending delivery; last says River will
// not retry a failure.
func (s *Service) deliver(ctx context.Context, client *http.Client, args DeliverArgs, last bool) error {
	d, err := agentdb.New(s.pool).DeliveryByID(ctx, agentdb.DeliveryByIDParams{TenantID: args.TenantID, ID: args.DeliveryID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read delivery %s: %w", args.DeliveryID, err)
	}
	if d.Status != DeliveryPending {
		return nil // delivered or given up: never POST again
	}
	body, err := s.webhookBody(ctx, d)
	if err != nil {
		return err
	}
	var res attempt
	if secret, err := s.signingSecret(ctx, d.TenantID); err != nil {
		res.err = "signing secret: " + err.Error()
	} else {
		res = post(ctx, client, d, secret, body)
	}
	return s.recordAttempt(context.WithoutCancel(ctx), d, res, last)
}

// webhookBody renders the payload from the stored run, so every attempt
// sends the same body.
func (s *Service) webhookBody(ctx context.Context, d agentdb.Delivery) ([]byte, error) {
	q := agentdb.New(s.pool)
	run, err := q.RunByID(ctx, agentdb.RunByIDParams{TenantID: d.TenantID, ID: d.RunID})
	if err != nil {
		return nil, notFound(err, "run", d.RunID.String())
	}
	r := runFromRow(run)
	p := WebhookPayload{DeliveryID: d.ID, Event: EventRunCompleted, Run: WebhookRun{
		ID: r.ID, ThreadID: r.ThreadID, Agent: r.AgentName, Status: r.Status, StopReason: r.StopReason,
		Error: r.Error, Metadata: r.Metadata, Turns: r.Turns, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt,
		Usage: WebhookUsage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, TotalTokens: r.TotalTokens},
	}}
	st, err := q.RunSettlement(ctx, agentdb.RunSettlementParams{TenantID: d.TenantID, RunID: d.RunID})
	switch {
	case err == nil:
		if p.Run.Delivery, err = receiptFromRow(st); err != nil {
			return nil, err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("read settlement of run %s: %w", d.RunID, err)
	}
	p.FinalMessage, err = q.RunFinalMessage(ctx, agentdb.RunFinalMessageParams{TenantID: d.TenantID, RunID: d.RunID})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read final message of run %s: %w", d.RunID, err)
	}
	return json.Marshal(p)
}

// signingSecret reveals the tenant's signing secret, creating it on first
// need when the vault can write. Deliveries racing to create it take turns
// through a try-lock (no connection is held while waiting), so it is
// created once.
func (s *Service) signingSecret(ctx context.Context, tenantID uuid.UUID) (string, error) {
	if s.secrets == nil {
		return "", errors.New("no secrets vault configured")
	}
	w, canCreate := s.secrets.(SecretWriter)
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		v, err := s.secrets.Reveal(ctx, tenantID, WebhookSecretName)
		if !isNotFoundErr(err) {
			return v, err
		}
		if !canCreate {
			return "", fmt.Errorf("the tenant has no %s secret", WebhookSecretName)
		}
		v, created, err := s.createSigningSecret(ctx, w, tenantID)
		if err != nil || created {
			return v, err
		}
		if wait > 2*time.Second {
			return "", errors.New("the signing secret is being created by another delivery")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
	}
}

// createSigningSecret stores 32 random bytes (hex) as the tenant's signing
// secret, unless another delivery holds the creation lock (created false)
// or created it already (its value).
func (s *Service) createSigningSecret(ctx context.Context, w SecretWriter, tenantID uuid.UUID) (v string, created bool, err error) {
	err = pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		locked, err := agentdb.New(tx).TryLockWebhookSecret(ctx, tenantID)
		if err != nil || !locked {
			return err
		}
		created = true
		if v, err = s.secrets.Reveal(ctx, tenantID, WebhookSecretName); !isNotFoundErr(err) {
			return err // created before we locked
		}
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		v = hex.EncodeToString(raw)
		a := tenants.Access{Principal: policy.System, Tenant: tenants.Tenant{ID: tenantID}}
		_, err = w.PutTx(ctx, tx, a, WebhookSecretName, v)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("create signing secret: %w", err)
	}
	return v, created, nil
}

func isNotFoundErr(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// post sends one signed attempt and drops the answer's body.
func post(ctx context.Context, client *http.Client, d agentdb.Delivery, secret string, body []byte) attempt {
	ts := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Url, bytes.NewReader(body))
	if err != nil {
		return attempt{err: "build request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentplane-webhooks/1")
	req.Header.Set(HeaderWebhookDelivery, d.ID.String())
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, SignWebhook(secret, ts, body))
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is on the delivery already
		}
		return attempt{err: storable(err.Error()), took: time.Since(start)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxReceiverBody))
	_ = res.Body.Close()
	out := attempt{code: res.StatusCode, took: time.Since(start)}
	if !out.ok() {
		out.err = "receiver answered " + res.Status
	}
	return out
}

// recordAttempt stores an attempt and the delivery's new status in one
// transaction, and turns a failure into the job's error.
func (s *Service) recordAttempt(ctx context.Context, d agentdb.Delivery, res attempt, last bool) error {
	status := DeliveryPending
	switch {
	case res.ok():
		status = DeliveryDelivered
	case last:
		status = DeliveryFailed
	}
	var code *int32
	if res.code != 0 {
		c := int32(res.code)
		code = &c
	}
	n := int32(0)
	err := pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		q := agentdb.New(tx)
		row, err := q.RecordDeliveryAttempt(ctx, agentdb.RecordDeliveryAttemptParams{
			TenantID: d.TenantID, ID: d.ID, Status: status, StatusCode: code, Error: nonEmpty(res.err),
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // finished by another attempt meanwhile
		}
		if err != nil {
			return err
		}
		n = row.Attempts
		return q.InsertDeliveryAttempt(ctx, agentdb.InsertDeliveryAttemptParams{
			TenantID: d.TenantID, DeliveryID: d.ID, Attempt: n, StatusCode: code, Error: nonEmpty(res.err),
			DurationMs: int32(res.took.Milliseconds()),
		})
	})
	if err != nil {
		return fmt.Errorf("record attempt of delivery %s: %w", d.ID, err)
	}
	if res.ok() || n == 0 {
		return nil
	}
	s.logger.WarnContext(ctx, "webhook delivery attempt failed",
		slog.String("tenant_id", d.TenantID.String()), slog.String("delivery_id", d.ID.String()),
		slog.String("run_id", d.RunID.String()), slog.Int("attempt", int(n)), slog.Int("status_code", res.code),
		slog.String("status", status))
	return fmt.Errorf("deliver %s (attempt %d): %s", d.ID, n, res.err)
}
