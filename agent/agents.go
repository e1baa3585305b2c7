package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// DefaultAgentName names the agent a run gets when it names none. Every
// tenant has it: it is created on first use and cannot be deleted.
const DefaultAgentName = "default"

// Agent limits and defaults.
const (
	DefaultMaxTurns       = 50
	DefaultTimeoutSeconds = 600
	MaxMaxTurns           = 1000
	MaxTimeoutSeconds     = 86400
	MaxInstructions       = 32768 // characters
)

// Agent is a named configuration runs execute with.
type Agent struct {
	ID, TenantID uuid.UUID
	Name         string
	// Model names a model endpoint of the tenant; nil means the tenant's
	// default endpoint (see ModelFor).
	Model        *string
	Instructions string
	// ToolGroups are the tool groups the agent is offered (never nil).
	ToolGroups []string
	// Skills are the skills the agent may use: nil means every enabled
	// skill, an empty list none.
	Skills    []string
	Subagents bool
	// MaxTurns bounds the model calls of one run.
	MaxTurns int
	// TokenBudget bounds the tokens of one run; nil means no budget.
	TokenBudget    *int64
	TimeoutSeconds int
	// WebhookURL receives the results of runs that name no webhook of their own.
	WebhookURL *string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

func agentFromRow(r agentdb.Agent) Agent {
	groups := r.ToolGroups
	if groups == nil {
		groups = []string{}
	}
	return Agent{
		ID: r.ID, TenantID: r.TenantID, Name: r.Name, Model: r.Model, Instructions: r.Instructions,
		ToolGroups: groups, Skills: r.Skills, Subagents: r.Subagents, MaxTurns: int(r.MaxTurns),
		TokenBudget: r.TokenBudget, TimeoutSeconds: int(r.TimeoutSeconds), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		WebhookURL: r.WebhookUrl,
	}
}

// auditFields describes the agent for the audit log; instructions appear as
// a digest, not verbatim.
func (ag Agent) auditFields() map[string]any {
	return map[string]any{
		"name": ag.Name, "model": deref(ag.Model), "instructions": textDigest(ag.Instructions),
		"tool_groups": ag.ToolGroups, "skills": skillsForDiff(ag.Skills), "subagents": ag.Subagents,
		"max_turns": ag.MaxTurns, "token_budget": deref(ag.TokenBudget), "timeout_seconds": ag.TimeoutSeconds,
		"webhook_url": redactWebhookURL(ag.WebhookURL),
	}
}

// skillsForDiff keeps "every skill" (nil) apart from "none" ([]) in a diff.
func skillsForDiff(s []string) any {
	if s == nil {
		return nil
	}
	return s
}

// AgentInput describes a new agent.
type AgentInput struct {
	Name string
	// Model names an existing endpoint; nil means the tenant's default.
	Model        *string
	Instructions string
	ToolGroups   []string
	// Skills: nil means every enabled skill, an empty list none.
	Skills    []string
	Subagents bool
	// MaxTurns 0 means DefaultMaxTurns.
	MaxTurns int
	// TokenBudget nil means no budget.
	TokenBudget *int64
	// TimeoutSeconds 0 means DefaultTimeoutSeconds.
	TimeoutSeconds int
	// WebhookURL nil means runs without a webhook of their own get none.
	WebhookURL *string
}

func (in AgentInput) withDefaults() AgentInput {
	if in.MaxTurns == 0 {
		in.MaxTurns = DefaultMaxTurns
	}
	if in.TimeoutSeconds == 0 {
		in.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if in.ToolGroups == nil {
		in.ToolGroups = []string{}
	}
	return in
}

// validate checks a complete definition (defaults applied).
func (in AgentInput) validate() error {
	if err := checkName("name", in.Name); err != nil {
		return err
	}
	if in.Model != nil {
		if err := checkName("model", *in.Model); err != nil {
			return err
		}
	}
	checks := []error{
		checkLength("instructions", in.Instructions, 0, MaxInstructions),
		checkNames("tool_groups", in.ToolGroups),
		checkNames("skills", in.Skills),
		checkRange("max_turns", in.MaxTurns, 1, MaxMaxTurns),
		checkRange("timeout_seconds", in.TimeoutSeconds, 1, MaxTimeoutSeconds),
	}
	if in.TokenBudget != nil && *in.TokenBudget <= 0 {
		checks = append(checks, &InvalidError{Field: "token_budget", Message: "must be positive, or null for no budget"})
	}
	if in.WebhookURL != nil {
		checks = append(checks, ValidateWebhookURL(*in.WebhookURL))
	}
	return firstError(checks)
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// AgentPatch changes an agent; nil fields stay as they are. The name cannot
// change: runs and channels refer to agents by name.
type AgentPatch struct {
	// Model names another endpoint; "" means the tenant's default.
	Model        *string
	Instructions *string
	ToolGroups   *[]string
	// Skills points at the new list: a nil list means every enabled skill,
	// an empty one none. A nil pointer leaves the skills alone.
	Skills    *[]string
	Subagents *bool
	MaxTurns  *int
	// TokenBudget sets the budget; 0 removes it.
	TokenBudget    *int64
	TimeoutSeconds *int
	// WebhookURL sets the default webhook; "" removes it.
	WebhookURL *string
}

// apply returns the definition the patch turns cur into.
func (p AgentPatch) apply(cur Agent) AgentInput {
	in := AgentInput{
		Name: cur.Name, Model: cur.Model, Instructions: cur.Instructions, ToolGroups: cur.ToolGroups,
		Skills: cur.Skills, Subagents: cur.Subagents, MaxTurns: cur.MaxTurns, TokenBudget: cur.TokenBudget,
		TimeoutSeconds: cur.TimeoutSeconds, WebhookURL: cur.WebhookURL,
	}
	if p.WebhookURL != nil {
		in.WebhookURL = p.WebhookURL
		if *p.WebhookURL == "" {
			in.WebhookURL = nil
		}
	}
	if p.Model != nil {
		in.Model = p.Model
		if *p.Model == "" {
			in.Model = nil
		}
	}
	if p.Instructions != nil {
		in.Instructions = *p.Instructions
	}
	if p.ToolGroups != nil {
		in.ToolGroups = *p.ToolGroups
	}
	if p.Skills != nil {
		in.Skills = *p.Skills
	}
	if p.Subagents != nil {
		in.Subagents = *p.Subagents
	}
	if p.MaxTurns != nil {
		in.MaxTurns = *p.MaxTurns
		if in.MaxTurns == 0 {
			in.MaxTurns = -1 // explicit 0 is invalid, not "default"
		}
	}
	if p.TokenBudget != nil {
		in.TokenBudget = p.TokenBudget
		if *p.TokenBudget == 0 {
			in.TokenBudget = nil
		}
	}
	if p.TimeoutSeconds != nil {
		in.TimeoutSeconds = *p.TimeoutSeconds
		if in.TimeoutSeconds == 0 {
			in.TimeoutSeconds = -1
		}
	}
	return in
}

// CreateAgent adds an agent to a.Tenant. Its model, when named, must be an
// existing endpoint (422 on field "model" otherwise).
func (s *Service) CreateAgent(ctx context.Context, a tenants.Access, in AgentInput) (Agent, error) {
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Agent, error) {
		return s.CreateAgentTx(ctx, tx, a, in)
	})
}

// CreateAgentTx is CreateAgent inside the caller's transaction.
func (s *Service) CreateAgentTx(ctx context.Context, tx pgx.Tx, a tenants.Access, in AgentInput) (Agent, error) {
	in = in.withDefaults()
	if err := in.validate(); err != nil {
		return Agent{}, err
	}
	q := agentdb.New(tx)
	if err := shareModel(ctx, q, a.Tenant.ID, in.Model); err != nil {
		return Agent{}, err
	}
	row, err := q.CreateAgent(ctx, agentdb.CreateAgentParams{
		TenantID: a.Tenant.ID, ID: uuid.Must(uuid.NewV7()), Name: in.Name, Model: in.Model,
		Instructions: in.Instructions, ToolGroups: in.ToolGroups, Skills: in.Skills, Subagents: in.Subagents,
		MaxTurns: int32(in.MaxTurns), TokenBudget: in.TokenBudget, TimeoutSeconds: int32(in.TimeoutSeconds),
		WebhookUrl: in.WebhookURL,
	})
	if pg.IsCode(err, pg.CodeUniqueViolation) {
		return Agent{}, &ConflictError{Code: "name_taken", Message: fmt.Sprintf("an agent named %q exists", in.Name)}
	}
	if err != nil {
		return Agent{}, fmt.Errorf("create agent %s: %w", in.Name, err)
	}
	ag := agentFromRow(row)
	return ag, recordDefinition(ctx, tx, a.Tenant.ID, a.Principal, "agent.create", "agent", ag.ID, ag.auditFields())
}

// shareModel checks that the named endpoint exists and holds it FOR SHARE
// until the transaction ends, so DeleteModel cannot remove it meanwhile.
func shareModel(ctx context.Context, q *agentdb.Queries, tenantID uuid.UUID, model *string) error {
	if model == nil {
		return nil
	}
	_, err := q.ShareModel(ctx, agentdb.ShareModelParams{TenantID: tenantID, Name: *model})
	if errors.Is(err, pgx.ErrNoRows) {
		return &InvalidError{Field: "model", Message: fmt.Sprintf("no model endpoint named %q", *model)}
	}
	if err != nil {
		return fmt.Errorf("look up model %s: %w", *model, err)
	}
	return nil
}

// AgentPage is one page of agents, oldest first.
type AgentPage struct {
	Agents     []Agent
	NextCursor string
}

// ListAgents lists a.Tenant's agents in creation order. The first page
// makes sure the default agent exists, so it is always listed.
func (s *Service) ListAgents(ctx context.Context, a tenants.Access, p tenants.Page) (AgentPage, error) {
	after, err := pageBefore(p) // decodes the cursor: the last id seen
	if err != nil {
		return AgentPage{}, err
	}
	if after == nil {
		if _, err := s.AgentByName(ctx, a.Tenant.ID, DefaultAgentName); err != nil {
			return AgentPage{}, err
		}
	}
	lim := pageLimit(p)
	rows, err := agentdb.New(s.pool).ListAgents(ctx, agentdb.ListAgentsParams{TenantID: a.Tenant.ID, After: after, Lim: lim})
	if err != nil {
		return AgentPage{}, fmt.Errorf("list agents of %s: %w", a.Tenant.Slug, err)
	}
	out := AgentPage{Agents: make([]Agent, len(rows))}
	for i, r := range rows {
		out.Agents[i] = agentFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = pageNext(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// GetAgent returns one agent of a.Tenant by name ("default" always exists).
func (s *Service) GetAgent(ctx context.Context, a tenants.Access, name string) (Agent, error) {
	return s.AgentByName(ctx, a.Tenant.ID, name)
}

// AgentByName returns the tenant's agent of that name. The default agent is
// created on first use (MaxTurns 50, TimeoutSeconds 600, the tenant's
// default model), exactly once however many callers race to it.
func (s *Service) AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (Agent, error) {
	row, err := agentdb.New(s.pool).AgentByName(ctx, agentdb.AgentByNameParams{TenantID: tenantID, Name: name})
	if err == nil {
		return agentFromRow(row), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) || name != DefaultAgentName {
		return Agent{}, notFound(err, "agent", name)
	}
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Agent, error) {
		return s.AgentByNameTx(ctx, tx, tenantID, name)
	})
}

// AgentByNameTx is AgentByName inside the caller's transaction (which must
// run at READ COMMITTED for the default agent's race to resolve).
func (s *Service) AgentByNameTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, name string) (Agent, error) {
	q := agentdb.New(tx)
	row, err := q.AgentByName(ctx, agentdb.AgentByNameParams{TenantID: tenantID, Name: name})
	if err == nil {
		return agentFromRow(row), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) || name != DefaultAgentName {
		return Agent{}, notFound(err, "agent", name)
	}
	row, err = q.EnsureAgent(ctx, agentdb.EnsureAgentParams{
		TenantID: tenantID, ID: uuid.Must(uuid.NewV7()), Name: DefaultAgentName,
		MaxTurns: DefaultMaxTurns, TimeoutSeconds: DefaultTimeoutSeconds,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// Another transaction created it first; the insert waited for it to
		// commit, so this statement sees it.
		row, err = q.AgentByName(ctx, agentdb.AgentByNameParams{TenantID: tenantID, Name: name})
		if err != nil {
			return Agent{}, notFound(err, "agent", name)
		}
		return agentFromRow(row), nil
	}
	if err != nil {
		return Agent{}, fmt.Errorf("create default agent: %w", err)
	}
	ag := agentFromRow(row)
	return ag, recordDefinition(ctx, tx, tenantID, policy.System, "agent.create", "agent", ag.ID, ag.auditFields())
}

// UpdateAgent changes an agent. A newly named model must be an existing
// endpoint (422 on field "model" otherwise).
func (s *Service) UpdateAgent(ctx context.Context, a tenants.Access, name string, in AgentPatch) (Agent, error) {
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Agent, error) {
		return s.UpdateAgentTx(ctx, tx, a, name, in)
	})
}

// UpdateAgentTx is UpdateAgent inside the caller's transaction.
func (s *Service) UpdateAgentTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name string, in AgentPatch) (Agent, error) {
	if name == DefaultAgentName {
		if _, err := s.AgentByNameTx(ctx, tx, a.Tenant.ID, name); err != nil {
			return Agent{}, err
		}
	}
	q := agentdb.New(tx)
	row, err := q.LockAgent(ctx, agentdb.LockAgentParams{TenantID: a.Tenant.ID, Name: name})
	if err != nil {
		return Agent{}, notFound(err, "agent", name)
	}
	cur := agentFromRow(row)
	next := in.apply(cur).withDefaults()
	if err := next.validate(); err != nil {
		return Agent{}, err
	}
	if next.Model != nil && deref(next.Model) != deref(cur.Model) {
		if err := shareModel(ctx, q, a.Tenant.ID, next.Model); err != nil {
			return Agent{}, err
		}
	}
	row, err = q.UpdateAgent(ctx, agentdb.UpdateAgentParams{
		TenantID: a.Tenant.ID, ID: cur.ID, Model: next.Model, Instructions: next.Instructions,
		ToolGroups: next.ToolGroups, Skills: next.Skills, Subagents: next.Subagents, MaxTurns: int32(next.MaxTurns),
		TokenBudget: next.TokenBudget, TimeoutSeconds: int32(next.TimeoutSeconds), WebhookUrl: next.WebhookURL,
	})
	if err != nil {
		return Agent{}, fmt.Errorf("update agent %s: %w", name, err)
	}
	updated := agentFromRow(row)
	diff := fieldChanges(map[string][2]any{
		"model":           {deref(cur.Model), deref(updated.Model)},
		"instructions":    {textDigest(cur.Instructions), textDigest(updated.Instructions)},
		"tool_groups":     {cur.ToolGroups, updated.ToolGroups},
		"skills":          {skillsForDiff(cur.Skills), skillsForDiff(updated.Skills)},
		"subagents":       {cur.Subagents, updated.Subagents},
		"max_turns":       {cur.MaxTurns, updated.MaxTurns},
		"token_budget":    {deref(cur.TokenBudget), deref(updated.TokenBudget)},
		"timeout_seconds": {cur.TimeoutSeconds, updated.TimeoutSeconds},
		"webhook_url":     {redactWebhookURL(cur.WebhookURL), redactWebhookURL(updated.WebhookURL)},
	})
	if len(diff) == 0 {
		return updated, nil // nothing changed, nothing to audit
	}
	diff["name"] = name
	return updated, recordDefinition(ctx, tx, a.Tenant.ID, a.Principal, "agent.update", "agent", updated.ID, diff)
}

// DeleteAgent removes an agent. The default agent cannot be deleted (409
// default_agent); runs keep the agent's name and id for the record.
func (s *Service) DeleteAgent(ctx context.Context, a tenants.Access, name string) error {
	return pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		return s.DeleteAgentTx(ctx, tx, a, name)
	})
}

// DeleteAgentTx is DeleteAgent inside the caller's transaction.
func (s *Service) DeleteAgentTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name string) error {
	if name == DefaultAgentName {
		return &ConflictError{Code: "default_agent", Message: "the default agent cannot be deleted; change it instead"}
	}
	q := agentdb.New(tx)
	row, err := q.LockAgent(ctx, agentdb.LockAgentParams{TenantID: a.Tenant.ID, Name: name})
	if err != nil {
		return notFound(err, "agent", name)
	}
	if _, err := q.DeleteAgent(ctx, agentdb.DeleteAgentParams{TenantID: a.Tenant.ID, ID: row.ID}); err != nil {
		return fmt.Errorf("delete agent %s: %w", name, err)
	}
	ag := agentFromRow(row)
	return recordDefinition(ctx, tx, a.Tenant.ID, a.Principal, "agent.delete", "agent", ag.ID, ag.auditFields())
}
