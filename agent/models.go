package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants"
)

// Model endpoint limits and defaults.
const (
	DefaultContextWindow = 128000
	maxContextWindow     = 100_000_000
	maxBaseURL           = 2048
	maxModelID           = 200
)

// ModelEndpoint is an OpenAI-compatible endpoint a tenant's agents may call.
// APIKeySecret names the vault secret holding its API key; the key itself
// never leaves the vault except to the model client.
type ModelEndpoint struct {
	ID, TenantID  uuid.UUID
	Name          string
	BaseURL       string
	Model         string
	APIKeySecret  *string
	Default       bool
	ContextWindow int
	SupportsTools bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

func modelFromRow(r agentdb.ModelEndpoint) ModelEndpoint {
	return ModelEndpoint{
		ID: r.ID, TenantID: r.TenantID, Name: r.Name, BaseURL: r.BaseUrl, Model: r.Model,
		APIKeySecret: r.ApiKeySecret, Default: r.IsDefault, ContextWindow: int(r.ContextWindow),
		SupportsTools: r.SupportsTools, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// auditFields describes the endpoint for the audit log. The key is named
// api_key_ref: it holds the secret's name, and a key containing "secret"
// would be redacted by the audit log's defence in depth.
func (m ModelEndpoint) auditFields() map[string]any {
	return map[string]any{
		"name": m.Name, "base_url": m.BaseURL, "model": m.Model, "api_key_ref": deref(m.APIKeySecret),
		"default": m.Default, "context_window": m.ContextWindow, "supports_tools": m.SupportsTools,
	}
}

// ModelInput describes a new endpoint.
type ModelInput struct {
	Name    string
	BaseURL string
	// Model is the model id sent to the endpoint, e.g. "gpt-4o".
	Model        string
	APIKeySecret *string
	// Default makes this the tenant's default endpoint (clearing the flag on
	// the others). Nil means: default only when the tenant has none yet.
	Default *bool
	// ContextWindow in tokens; 0 means DefaultContextWindow.
	ContextWindow int
	// SupportsTools; nil means true.
	SupportsTools *bool
}

func (in ModelInput) validate() error {
	if err := checkName("name", in.Name); err != nil {
		return err
	}
	if err := checkBaseURL(in.BaseURL); err != nil {
		return err
	}
	if err := checkLength("model", in.Model, 1, maxModelID); err != nil {
		return err
	}
	if in.APIKeySecret != nil && !keySecretRE.MatchString(*in.APIKeySecret) {
		return &InvalidError{Field: "api_key_secret", Message: "must name a secret matching " + SecretNamePattern}
	}
	if in.ContextWindow != 0 {
		return checkRange("context_window", in.ContextWindow, 1, maxContextWindow)
	}
	return nil
}

// ModelPatch changes an endpoint; nil fields stay as they are. The name
// cannot change: agents refer to endpoints by name.
type ModelPatch struct {
	BaseURL *string
	Model   *string
	// APIKeySecret names another secret; "" removes the key.
	APIKeySecret *string
	// Default true makes this the tenant's default (clearing the others);
	// false leaves the tenant without a default.
	Default       *bool
	ContextWindow *int
	SupportsTools *bool
}

func (p ModelPatch) validate() error {
	if p.BaseURL != nil {
		if err := checkBaseURL(*p.BaseURL); err != nil {
			return err
		}
	}
	if p.Model != nil {
		if err := checkLength("model", *p.Model, 1, maxModelID); err != nil {
			return err
		}
	}
	if p.APIKeySecret != nil && *p.APIKeySecret != "" && !keySecretRE.MatchString(*p.APIKeySecret) {
		return &InvalidError{Field: "api_key_secret", Message: "must name a secret matching " + SecretNamePattern + ", or be empty to remove it"}
	}
	if p.ContextWindow != nil {
		return checkRange("context_window", *p.ContextWindow, 1, maxContextWindow)
	}
	return nil
}

func (p ModelPatch) apply(m ModelEndpoint) ModelEndpoint {
	if p.BaseURL != nil {
		m.BaseURL = *p.BaseURL
	}
	if p.Model != nil {
		m.Model = *p.Model
	}
	if p.APIKeySecret != nil {
		m.APIKeySecret = p.APIKeySecret
		if *p.APIKeySecret == "" {
			m.APIKeySecret = nil
		}
	}
	if p.Default != nil {
		m.Default = *p.Default
	}
	if p.ContextWindow != nil {
		m.ContextWindow = *p.ContextWindow
	}
	if p.SupportsTools != nil {
		m.SupportsTools = *p.SupportsTools
	}
	return m
}

// credentialParams are query parameter names that carry credentials; a base
// URL must not, because it is stored and shown in the clear.
var credentialParams = []string{"key", "token", "secret", "password", "auth", "sig", "credential"}

// checkBaseURL accepts an absolute http(s) URL without credentials in it.
func checkBaseURL(raw string) error {
	bad := func(msg string) error { return &InvalidError{Field: "base_url", Message: msg} }
	if raw == "" || len(raw) > maxBaseURL {
		return bad(fmt.Sprintf("must be 1 to %d bytes", maxBaseURL))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("must be an absolute http or https URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return bad("must be an absolute http or https URL")
	case u.User != nil:
		return bad("must not contain credentials; name a secret in api_key_secret instead")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("must not have a fragment")
	}
	for name := range u.Query() {
		lower := strings.ToLower(name)
		for _, c := range credentialParams {
			if strings.Contains(lower, c) {
				return bad(fmt.Sprintf("query parameter %q looks like a credential; name a secret in api_key_secret instead", name))
			}
		}
	}
	return nil
}

// CreateModel adds an endpoint to a.Tenant.
func (s *Service) CreateModel(ctx context.Context, a tenants.Access, in ModelInput) (ModelEndpoint, error) {
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (ModelEndpoint, error) {
		return s.CreateModelTx(ctx, tx, a, in)
	})
}

// CreateModelTx is CreateModel inside the caller's transaction.
func (s *Service) CreateModelTx(ctx context.Context, tx pgx.Tx, a tenants.Access, in ModelInput) (ModelEndpoint, error) {
	if err := in.validate(); err != nil {
		return ModelEndpoint{}, err
	}
	q := agentdb.New(tx)
	if err := q.LockModelDefault(ctx, a.Tenant.ID); err != nil {
		return ModelEndpoint{}, fmt.Errorf("create model %s: lock default: %w", in.Name, err)
	}
	isDefault := in.Default != nil && *in.Default
	if in.Default == nil {
		has, err := q.HasDefaultModel(ctx, a.Tenant.ID)
		if err != nil {
			return ModelEndpoint{}, fmt.Errorf("create model %s: %w", in.Name, err)
		}
		isDefault = !has
	}
	id := uuid.Must(uuid.NewV7())
	if isDefault {
		if err := q.ClearDefaultModel(ctx, agentdb.ClearDefaultModelParams{TenantID: a.Tenant.ID, KeepID: id}); err != nil {
			return ModelEndpoint{}, fmt.Errorf("create model %s: clear default: %w", in.Name, err)
		}
	}
	window := in.ContextWindow
	if window == 0 {
		window = DefaultContextWindow
	}
	row, err := q.CreateModel(ctx, agentdb.CreateModelParams{
		TenantID: a.Tenant.ID, ID: id, Name: in.Name, BaseUrl: in.BaseURL, Model: in.Model,
		ApiKeySecret: in.APIKeySecret, IsDefault: isDefault, ContextWindow: int32(window),
		SupportsTools: in.SupportsTools == nil || *in.SupportsTools,
	})
	if pg.IsCode(err, pg.CodeUniqueViolation) {
		return ModelEndpoint{}, &ConflictError{Code: "name_taken", Message: fmt.Sprintf("a model endpoint named %q exists", in.Name)}
	}
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("create model %s: %w", in.Name, err)
	}
	m := modelFromRow(row)
	return m, recordDefinition(ctx, tx, a.Tenant.ID, a.Principal, "model.create", "model", m.ID, m.auditFields())
}

// ModelPage is one page of endpoints, oldest first.
type ModelPage struct {
	Models     []ModelEndpoint
	NextCursor string
}

// ListModels lists a.Tenant's endpoints in creation order.
func (s *Service) ListModels(ctx context.Context, a tenants.Access, p tenants.Page) (ModelPage, error) {
	after, err := pageBefore(p) // decodes the cursor: the last id seen
	if err != nil {
		return ModelPage{}, err
	}
	lim := pageLimit(p)
	rows, err := agentdb.New(s.pool).ListModels(ctx, agentdb.ListModelsParams{TenantID: a.Tenant.ID, After: after, Lim: lim})
	if err != nil {
		return ModelPage{}, fmt.Errorf("list models of %s: %w", a.Tenant.Slug, err)
	}
	out := ModelPage{Models: make([]ModelEndpoint, len(rows))}
	for i, r := range rows {
		out.Models[i] = modelFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = pageNext(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// GetModel returns one endpoint of a.Tenant by name.
func (s *Service) GetModel(ctx context.Context, a tenants.Access, name string) (ModelEndpoint, error) {
	row, err := agentdb.New(s.pool).ModelByName(ctx, agentdb.ModelByNameParams{TenantID: a.Tenant.ID, Name: name})
	if err != nil {
		return ModelEndpoint{}, notFound(err, "model", name)
	}
	return modelFromRow(row), nil
}

// UpdateModel changes an endpoint. Making it the default clears the flag on
// the tenant's other endpoints in the same transaction.
func (s *Service) UpdateModel(ctx context.Context, a tenants.Access, name string, in ModelPatch) (ModelEndpoint, error) {
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (ModelEndpoint, error) {
		return s.UpdateModelTx(ctx, tx, a, name, in)
	})
}

// UpdateModelTx is UpdateModel inside the caller's transaction.
func (s *Service) UpdateModelTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name string, in ModelPatch) (ModelEndpoint, error) {
	if err := in.validate(); err != nil {
		return ModelEndpoint{}, err
	}
	q := agentdb.New(tx)
	if in.Default != nil {
		// The default lock comes before any row lock, as in CreateModelTx.
		if err := q.LockModelDefault(ctx, a.Tenant.ID); err != nil {
			return ModelEndpoint{}, fmt.Errorf("update model %s: lock default: %w", name, err)
		}
	}
	row, err := q.LockModel(ctx, agentdb.LockModelParams{TenantID: a.Tenant.ID, Name: name})
	if err != nil {
		return ModelEndpoint{}, notFound(err, "model", name)
	}
	cur := modelFromRow(row)
	next := in.apply(cur)
	if next.Default && !cur.Default {
		if err := q.ClearDefaultModel(ctx, agentdb.ClearDefaultModelParams{TenantID: a.Tenant.ID, KeepID: cur.ID}); err != nil {
			return ModelEndpoint{}, fmt.Errorf("update model %s: clear default: %w", name, err)
		}
	}
	row, err = q.UpdateModel(ctx, agentdb.UpdateModelParams{
		TenantID: a.Tenant.ID, ID: cur.ID, BaseUrl: next.BaseURL, Model: next.Model, ApiKeySecret: next.APIKeySecret,
		IsDefault: next.Default, ContextWindow: int32(next.ContextWindow), SupportsTools: next.SupportsTools,
	})
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("update model %s: %w", name, err)
	}
	updated := modelFromRow(row)
	diff := fieldChanges(map[string][2]any{
		"base_url":       {cur.BaseURL, updated.BaseURL},
		"model":          {cur.Model, updated.Model},
		"api_key_ref":    {deref(cur.APIKeySecret), deref(updated.APIKeySecret)},
		"default":        {cur.Default, updated.Default},
		"context_window": {cur.ContextWindow, updated.ContextWindow},
		"supports_tools": {cur.SupportsTools, updated.SupportsTools},
	})
	if len(diff) == 0 {
		return updated, nil // nothing changed, nothing to audit
	}
	diff["name"] = name
	return updated, recordDefinition(ctx, tx, a.Tenant.ID, a.Principal, "model.update", "model", updated.ID, diff)
}

// DeleteModel removes an endpoint no agent names (409 model_in_use
// otherwise). Deleting the default leaves the tenant without one.
func (s *Service) DeleteModel(ctx context.Context, a tenants.Access, name string) error {
	return pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		return s.DeleteModelTx(ctx, tx, a, name)
	})
}

// DeleteModelTx is DeleteModel inside the caller's transaction.
func (s *Service) DeleteModelTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name string) error {
	q := agentdb.New(tx)
	// The row lock waits for agents that are taking the endpoint FOR SHARE,
	// so the check below sees every agent that committed to using it.
	row, err := q.LockModel(ctx, agentdb.LockModelParams{TenantID: a.Tenant.ID, Name: name})
	if err != nil {
		return notFound(err, "model", name)
	}
	users, err := q.AgentsUsingModel(ctx, agentdb.AgentsUsingModelParams{TenantID: a.Tenant.ID, Model: &name})
	if err != nil {
		return fmt.Errorf("delete model %s: find agents using it: %w", name, err)
	}
	if len(users) > 0 {
		return &ConflictError{Code: "model_in_use", Message: fmt.Sprintf("model endpoint %q is used by agent %s; change or delete the agent first", name, strings.Join(users, ", "))}
	}
	if _, err := q.DeleteModel(ctx, agentdb.DeleteModelParams{TenantID: a.Tenant.ID, ID: row.ID}); err != nil {
		return fmt.Errorf("delete model %s: %w", name, err)
	}
	m := modelFromRow(row)
	return recordDefinition(ctx, tx, a.Tenant.ID, a.Principal, "model.delete", "model", m.ID, m.auditFields())
}

// ModelFor resolves the endpoint a run of ag calls: the endpoint the agent
// names, else the tenant's default. NotFoundError{Kind: "model"} when there
// is none.
func (s *Service) ModelFor(ctx context.Context, tenantID uuid.UUID, ag Agent) (ModelEndpoint, error) {
	q := agentdb.New(s.pool)
	if ag.Model != nil {
		row, err := q.ModelByName(ctx, agentdb.ModelByNameParams{TenantID: tenantID, Name: *ag.Model})
		if err != nil {
			return ModelEndpoint{}, notFound(err, "model", *ag.Model)
		}
		return modelFromRow(row), nil
	}
	row, err := q.DefaultModel(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ModelEndpoint{}, &NotFoundError{Kind: "model", Key: "default"}
	}
	if err != nil {
		return ModelEndpoint{}, fmt.Errorf("default model of tenant %s: %w", tenantID, err)
	}
	return modelFromRow(row), nil
}
