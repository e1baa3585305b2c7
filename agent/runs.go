package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// Run statuses and stop reasons, exactly as the API documents them.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimedOut  = "timed_out"

	StopEndTurn     = "end_turn"
	StopMaxTurns    = "max_turns"
	StopTokenBudget = "token_budget"
	StopModelLength = "model_length"
	StopCancelled   = "cancelled"
)

// Run is one agent invocation on a thread.
type Run struct {
	ID, TenantID, ThreadID uuid.UUID
	AgentName              string
	Status                 string
	StopReason             string
	Error                  string
	Input                  string
	Metadata               json.RawMessage
	Turns                  int
	InputTokens            int64
	OutputTokens           int64
	TotalTokens            int64
	CreatedAt              time.Time
	StartedAt, FinishedAt  *time.Time
	// WebhookURL receives the run's result when it ends ("" for none).
	WebhookURL string
}

// Terminal reports whether the run has ended.
func (r Run) Terminal() bool { return r.Status != StatusQueued && r.Status != StatusRunning }

func runFromRow(r agentdb.Run) Run {
	out := Run{
		ID: r.ID, TenantID: r.TenantID, ThreadID: r.ThreadID, AgentName: r.AgentName, Status: r.Status,
		Input: r.Input, Metadata: r.Metadata, Turns: int(r.Turns), InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, TotalTokens: r.TotalTokens, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
	}
	if r.StopReason != nil {
		out.StopReason = *r.StopReason
	}
	if r.Error != nil {
		out.Error = *r.Error
	}
	out.WebhookURL = deref0(r.WebhookUrl)
	return out
}

// CreateRunInput starts a run.
type CreateRunInput struct {
	Agent    string
	Input    string
	Metadata map[string]any
	// Secrets are request-scoped values for this run only; never stored.
	Secrets        map[string]string
	IdempotencyKey string
	// WebhookURL receives the result (see ValidateWebhookURL); "" means
	// the agent's default webhook, if any.
	WebhookURL string
}

// TooLargeError reports an input over its size limit (HTTP 413).
type TooLargeError struct {
	Field string
	Limit int
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("%s exceeds %d bytes", e.Field, e.Limit) }

var secretNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

func (s *Service) validateRun(in CreateRunInput) error {
	if len(bytes.TrimSpace([]byte(in.Input))) == 0 {
		return &InvalidError{Field: "input", Message: "must not be empty"}
	}
	if len(in.Input) > s.cfg.MaxInputBytes {
		return &TooLargeError{Field: "input", Limit: s.cfg.MaxInputBytes}
	}
	for name := range in.Secrets {
		if !secretNameRE.MatchString(name) {
			return &InvalidError{Field: "secrets", Message: fmt.Sprintf("secret name %q must match %s", name, secretNameRE)}
		}
	}
	if in.WebhookURL != "" {
		return ValidateWebhookURL(in.WebhookURL)
	}
	return nil
}

// CreateRun checks the input, inserts the run and enqueues its job in one
// transaction. With an idempotency key, the same key and body return the
// same run (created=false); the same key with another body is a conflict.
func (s *Service) CreateRun(ctx context.Context, a tenants.Access, threadID uuid.UUID, in CreateRunInput) (run Run, created bool, err error) {
	if err := s.validateRun(in); err != nil {
		return Run{}, false, err
	}
	if in.Agent == "" {
		in.Agent = "default"
	}
	if _, err := s.GetThread(ctx, a, threadID); err != nil {
		return Run{}, false, err
	}
	ag, err := s.AgentByName(ctx, a.Tenant.ID, in.Agent)
	if err != nil {
		return Run{}, false, err
	}
	metadata, err := json.Marshal(orEmpty(in.Metadata))
	if err != nil {
		return Run{}, false, &InvalidError{Field: "metadata", Message: "must be a JSON object"}
	}
	hash := requestHash(threadID, in, metadata)
	var key *string
	if in.IdempotencyKey != "" {
		key = &in.IdempotencyKey
	}
	err = pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		q := agentdb.New(tx)
		if key != nil {
			prev, err := q.RunByIdempotencyKey(ctx, agentdb.RunByIdempotencyKeyParams{TenantID: a.Tenant.ID, IdempotencyKey: key})
			if err == nil {
				if !bytes.Equal(prev.RequestHash, hash) {
					return &ConflictError{Code: "idempotency_key_reused", Message: "this Idempotency-Key was used with a different request"}
				}
				run = runFromRow(prev)
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("look up idempotency key: %w", err)
			}
		}
		row, err := q.CreateRun(ctx, agentdb.CreateRunParams{
			TenantID: a.Tenant.ID, ID: uuid.Must(uuid.NewV7()), ThreadID: threadID, AgentID: ag.ID, AgentName: ag.Name,
			PrincipalKind: string(a.Principal.Kind), PrincipalID: a.Principal.ID, PrincipalRole: string(a.Role),
			Input: in.Input, Metadata: metadata, IdempotencyKey: key, RequestHash: hash,
			WebhookUrl: webhookFor(in.WebhookURL, ag),
		})
		if pg.IsCode(err, pg.CodeUniqueViolation) {
			return &ConflictError{Code: "idempotency_key_in_flight", Message: "a request with this Idempotency-Key is being processed; retry"}
		}
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		run, created = runFromRow(row), true
		if _, err := s.appendEvent(ctx, tx, a.Tenant.ID, run.ID, nil, EventRunQueued, map[string]any{"agent": ag.Name}); err != nil {
			return err
		}
		return s.enqueue(ctx, tx, run, in.Secrets)
	})
	if err != nil {
		return Run{}, false, err
	}
	if created && len(in.Secrets) > 0 {
		s.stash.put(run.ID, in.Secrets)
	}
	return run, created, nil
}

// requestHash identifies a create-run request for idempotency. Secret
// values are left out (only their names count): no derivative of a secret
// is stored.
func requestHash(threadID uuid.UUID, in CreateRunInput, metadata []byte) []byte {
	names := make([]string, 0, len(in.Secrets))
	for n := range in.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := []any{threadID, in.Agent, in.Input, json.RawMessage(metadata), names}
	if in.WebhookURL != "" {
		parts = append(parts, in.WebhookURL) // only then, so older keys keep their hash
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return sum[:]
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// GetRun returns one run of the tenant.
func (s *Service) GetRun(ctx context.Context, a tenants.Access, id uuid.UUID) (Run, error) {
	row, err := agentdb.New(s.pool).RunByID(ctx, agentdb.RunByIDParams{TenantID: a.Tenant.ID, ID: id})
	if err != nil {
		return Run{}, notFound(err, "run", id.String())
	}
	return runFromRow(row), nil
}

// RunFilter narrows ListRuns.
type RunFilter struct {
	ThreadID *uuid.UUID
	Status   string
}

// RunPage is one page of runs, newest first.
type RunPage struct {
	Runs       []Run
	NextCursor string
}

// ListRuns lists the tenant's runs, newest first.
func (s *Service) ListRuns(ctx context.Context, a tenants.Access, f RunFilter, p tenants.Page) (RunPage, error) {
	before, err := pageBefore(p)
	if err != nil {
		return RunPage{}, err
	}
	lim := pageLimit(p)
	var status *string
	if f.Status != "" {
		status = &f.Status
	}
	rows, err := agentdb.New(s.pool).ListRuns(ctx, agentdb.ListRunsParams{
		TenantID: a.Tenant.ID, ThreadID: f.ThreadID, Status: status, Before: before, Lim: lim,
	})
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	out := RunPage{Runs: make([]Run, len(rows))}
	for i, r := range rows {
		out.Runs[i] = runFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = pageNext(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// CancelRun cancels a run; it is idempotent. A queued run ends cancelled at
// once and never starts; a running one stops at its next step boundary.
func (s *Service) CancelRun(ctx context.Context, a tenants.Access, id uuid.UUID) (Run, error) {
	var out Run
	err := pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		q := agentdb.New(tx)
		row, err := q.CancelQueuedRun(ctx, agentdb.CancelQueuedRunParams{TenantID: a.Tenant.ID, ID: id})
		if err == nil {
			out = runFromRow(row)
			if _, err = s.appendEvent(ctx, tx, a.Tenant.ID, id, nil, EventRunCompleted, completedData(out)); err != nil {
				return err
			}
			return s.enqueueDeliveryTx(ctx, tx, row)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("cancel run %s: %w", id, err)
		}
		row, err = q.RequestCancel(ctx, agentdb.RequestCancelParams{TenantID: a.Tenant.ID, ID: id})
		if errors.Is(err, pgx.ErrNoRows) {
			row, err = q.RunByID(ctx, agentdb.RunByIDParams{TenantID: a.Tenant.ID, ID: id})
		}
		if err != nil {
			return notFound(err, "run", id.String())
		}
		out = runFromRow(row)
		return nil
	})
	return out, err
}

// principalOf rebuilds the principal a run acts for.
func principalOf(r agentdb.Run) policy.Principal {
	p := policy.Principal{Kind: policy.Kind(r.PrincipalKind), ID: r.PrincipalID, Role: policy.Role(r.PrincipalRole)}
	if p.Kind == policy.KindAPIKey {
		p.TenantID = r.TenantID.String()
	}
	p.PlatformAdmin = p.Kind == policy.KindPlatformAdmin || p.Kind == policy.KindSystem
	return p
}
