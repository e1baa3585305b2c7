package agent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
)

// defs is an agent service over the package database with a fresh tenant.
type defs struct {
	svc    *agent.Service
	pool   *pgxpool.Pool
	access tenants.Access
}

func newDefs(t *testing.T) defs {
	t.Helper()
	pool := pgtest.Pool(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := agent.NewService(pool, agent.Config{}, nil, logger)
	require.NoError(t, err)
	return defs{svc: svc, pool: pool, access: newTenant(t, pool)}
}

func newTenant(t *testing.T, pool *pgxpool.Pool) tenants.Access {
	t.Helper()
	ts, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	tn, err := ts.CreateTenant(t.Context(), policy.System, tenants.CreateTenantInput{Slug: "defs-" + pgtest.Suffix(), Name: "defs"})
	require.NoError(t, err)
	owner := policy.Principal{Kind: policy.KindAPIKey, ID: "key-" + pgtest.Suffix(), TenantID: tn.ID.String(), Role: policy.RoleOwner}
	return tenants.Access{Principal: owner, Tenant: tn, Role: policy.RoleOwner}
}

func ptr[T any](v T) *T { return &v }

func (d defs) model(t *testing.T, name string, isDefault *bool) agent.ModelEndpoint {
	t.Helper()
	m, err := d.svc.CreateModel(t.Context(), d.access, agent.ModelInput{
		Name: name, BaseURL: "https://llm.example.com/v1", Model: "gpt-test", Default: isDefault,
	})
	require.NoError(t, err)
	return m
}

// defaults lists the names of the tenant's default endpoints.
func (d defs) defaults(t *testing.T) []string {
	t.Helper()
	page, err := d.svc.ListModels(t.Context(), d.access, tenants.Page{Limit: 200})
	require.NoError(t, err)
	var out []string
	for _, m := range page.Models {
		if m.Default {
			out = append(out, m.Name)
		}
	}
	return out
}

// auditDiffs returns the diffs of the tenant's events with action, oldest first.
func (d defs) auditDiffs(t *testing.T, action string) []map[string]any {
	t.Helper()
	page, err := audit.List(t.Context(), d.pool, d.access.Tenant.ID, audit.Filter{Action: action, Limit: 200})
	require.NoError(t, err)
	out := make([]map[string]any, len(page.Events))
	for i, e := range page.Events {
		require.NoError(t, json.Unmarshal(e.Diff, &out[len(out)-1-i]))
	}
	return out
}

func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var inv *agent.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, field, inv.Field, "%v", err)
	require.ErrorIs(t, err, agent.ErrInvalidInput)
}

func requireConflict(t *testing.T, err error, code string) {
	t.Helper()
	var cf *agent.ConflictError
	require.ErrorAs(t, err, &cf)
	require.Equal(t, code, cf.Code, "%v", err)
}

func requireNotFound(t *testing.T, err error, kind string) {
	t.Helper()
	var nf *agent.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, kind, nf.Kind, "%v", err)
}

func TestModelCRUD(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()

	m, err := d.svc.CreateModel(ctx, d.access, agent.ModelInput{
		Name: "main", BaseURL: "https://llm.example.com/v1?api-version=2024", Model: "gpt-4o",
		APIKeySecret: ptr("OPENAI_API_KEY"),
	})
	require.NoError(t, err)
	require.Equal(t, d.access.Tenant.ID, m.TenantID)
	require.True(t, m.Default, "the first endpoint becomes the default")
	require.Equal(t, agent.DefaultContextWindow, m.ContextWindow)
	require.True(t, m.SupportsTools)
	require.Equal(t, "OPENAI_API_KEY", *m.APIKeySecret)

	_, err = d.svc.CreateModel(ctx, d.access, agent.ModelInput{Name: "main", BaseURL: "http://other:8080", Model: "x"})
	requireConflict(t, err, "name_taken")

	got, err := d.svc.GetModel(ctx, d.access, "main")
	require.NoError(t, err)
	require.Equal(t, m, got)

	upd, err := d.svc.UpdateModel(ctx, d.access, "main", agent.ModelPatch{
		Model: ptr("gpt-4.1"), ContextWindow: ptr(1_000_000), SupportsTools: ptr(false), APIKeySecret: ptr(""),
	})
	require.NoError(t, err)
	require.Equal(t, "gpt-4.1", upd.Model)
	require.Equal(t, 1_000_000, upd.ContextWindow)
	require.False(t, upd.SupportsTools)
	require.Nil(t, upd.APIKeySecret, `"" removes the key`)
	require.Equal(t, m.BaseURL, upd.BaseURL)
	require.True(t, upd.Default)

	// A patch that changes nothing writes no audit event.
	_, err = d.svc.UpdateModel(ctx, d.access, "main", agent.ModelPatch{Model: ptr("gpt-4.1")})
	require.NoError(t, err)

	second := d.model(t, "second", nil)
	require.False(t, second.Default, "a tenant with a default keeps it")
	page, err := d.svc.ListModels(ctx, d.access, tenants.Page{Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Models, 1)
	require.Equal(t, "main", page.Models[0].Name)
	require.NotEmpty(t, page.NextCursor)
	page, err = d.svc.ListModels(ctx, d.access, tenants.Page{Limit: 1, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Equal(t, "second", page.Models[0].Name)
	_, err = d.svc.ListModels(ctx, d.access, tenants.Page{Cursor: "!!"})
	require.ErrorIs(t, err, agent.ErrInvalidCursor)

	require.NoError(t, d.svc.DeleteModel(ctx, d.access, "second"))
	_, err = d.svc.GetModel(ctx, d.access, "second")
	requireNotFound(t, err, "model")
	requireNotFound(t, d.svc.DeleteModel(ctx, d.access, "second"), "model")
	_, err = d.svc.UpdateModel(ctx, d.access, "second", agent.ModelPatch{Model: ptr("x")})
	requireNotFound(t, err, "model")

	// Audit: the key's secret is named, never revealed.
	created := d.auditDiffs(t, "model.create")
	require.Len(t, created, 2)
	require.Equal(t, "OPENAI_API_KEY", created[0]["api_key_ref"])
	require.Equal(t, "main", created[0]["name"])
	updated := d.auditDiffs(t, "model.update")
	require.Len(t, updated, 1)
	require.Equal(t, map[string]any{"from": "OPENAI_API_KEY", "to": nil}, updated[0]["api_key_ref"])
	require.Equal(t, map[string]any{"from": "gpt-4o", "to": "gpt-4.1"}, updated[0]["model"])
	require.NotContains(t, updated[0], "base_url")
	deleted := d.auditDiffs(t, "model.delete")
	require.Len(t, deleted, 1)
	require.Equal(t, "second", deleted[0]["name"])
}

func TestModelDefaultSwitching(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()

	d.model(t, "a", ptr(false))
	require.Empty(t, d.defaults(t), "explicit false is respected even without a default")
	d.model(t, "b", nil)
	require.Equal(t, []string{"b"}, d.defaults(t))
	d.model(t, "c", ptr(true))
	require.Equal(t, []string{"c"}, d.defaults(t))

	_, err := d.svc.UpdateModel(ctx, d.access, "a", agent.ModelPatch{Default: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, d.defaults(t))
	// The endpoint that lost the flag has an updated timestamp; its change
	// is part of the new default's audit event, not an event of its own.
	_, err = d.svc.UpdateModel(ctx, d.access, "a", agent.ModelPatch{Default: ptr(false)})
	require.NoError(t, err)
	require.Empty(t, d.defaults(t))

	// ModelFor: no default now.
	_, err = d.svc.ModelFor(ctx, d.access.Tenant.ID, agent.Agent{})
	requireNotFound(t, err, "model")

	// Racing promotions leave exactly one default.
	names := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Go(func() {
			if i%3 == 0 {
				_, err := d.svc.CreateModel(ctx, d.access, agent.ModelInput{
					Name: fmt.Sprintf("race-%d", i), BaseURL: "https://llm.example.com", Model: "m", Default: ptr(true),
				})
				errs <- err
				return
			}
			_, err := d.svc.UpdateModel(ctx, d.access, names[i%3], agent.ModelPatch{Default: ptr(true)})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, d.defaults(t), 1)

	def := d.defaults(t)[0]
	m, err := d.svc.ModelFor(ctx, d.access.Tenant.ID, agent.Agent{})
	require.NoError(t, err)
	require.Equal(t, def, m.Name)
	m, err = d.svc.ModelFor(ctx, d.access.Tenant.ID, agent.Agent{Model: ptr("b")})
	require.NoError(t, err)
	require.Equal(t, "b", m.Name)
	_, err = d.svc.ModelFor(ctx, d.access.Tenant.ID, agent.Agent{Model: ptr("gone")})
	requireNotFound(t, err, "model")
}

func TestModelValidation(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	valid := agent.ModelInput{Name: "ok", BaseURL: "https://llm.example.com/v1", Model: "m"}
	cases := []struct {
		name  string
		edit  func(*agent.ModelInput)
		field string
	}{
		{"uppercase name", func(in *agent.ModelInput) { in.Name = "Main" }, "name"},
		{"empty name", func(in *agent.ModelInput) { in.Name = "" }, "name"},
		{"long name", func(in *agent.ModelInput) { in.Name = strings.Repeat("a", 64) }, "name"},
		{"leading dash", func(in *agent.ModelInput) { in.Name = "-x" }, "name"},
		{"relative url", func(in *agent.ModelInput) { in.BaseURL = "/v1" }, "base_url"},
		{"ftp url", func(in *agent.ModelInput) { in.BaseURL = "ftp://llm.example.com" }, "base_url"},
		{"no host", func(in *agent.ModelInput) { in.BaseURL = "https:///v1" }, "base_url"},
		{"user info", func(in *agent.ModelInput) { in.BaseURL = "https://user:pw@llm.example.com" }, "base_url"},
		{"key in query", func(in *agent.ModelInput) { in.BaseURL = "https://llm.example.com/v1?api_key=sk-1" }, "base_url"},
		{"fragment", func(in *agent.ModelInput) { in.BaseURL = "https://llm.example.com/#x" }, "base_url"},
		{"empty model", func(in *agent.ModelInput) { in.Model = "" }, "model"},
		{"bad secret name", func(in *agent.ModelInput) { in.APIKeySecret = ptr("sk-live-123") }, "api_key_secret"},
		{"negative window", func(in *agent.ModelInput) { in.ContextWindow = -1 }, "context_window"},
	}
	for _, c := range cases {
		in := valid
		c.edit(&in)
		_, err := d.svc.CreateModel(t.Context(), d.access, in)
		requireInvalid(t, err, c.field)
	}
	_, err := d.svc.UpdateModel(t.Context(), d.access, "ok", agent.ModelPatch{BaseURL: ptr("nope")})
	requireInvalid(t, err, "base_url")
	_, err = d.svc.UpdateModel(t.Context(), d.access, "ok", agent.ModelPatch{APIKeySecret: ptr("1BAD")})
	requireInvalid(t, err, "api_key_secret")
	require.Empty(t, d.auditDiffs(t, "model.create"))
}

func TestModelInUse(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()
	d.model(t, "main", nil)
	_, err := d.svc.CreateAgent(ctx, d.access, agent.AgentInput{Name: "bot", Model: ptr("main")})
	require.NoError(t, err)

	err = d.svc.DeleteModel(ctx, d.access, "main")
	requireConflict(t, err, "model_in_use")
	require.ErrorIs(t, err, agent.ErrConflict)
	require.Contains(t, err.Error(), "bot")

	_, err = d.svc.UpdateAgent(ctx, d.access, "bot", agent.AgentPatch{Model: ptr("")})
	require.NoError(t, err)
	require.NoError(t, d.svc.DeleteModel(ctx, d.access, "main"))
}

// An agent naming an endpoint and the endpoint's deletion race: either the
// agent is created and the delete refused, or the delete wins and the
// agent is refused. Never both succeed.
func TestModelDeleteRacesAgentCreate(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()
	for i := range 10 {
		name := fmt.Sprintf("m%d", i)
		d.model(t, name, nil)
		var agentErr, deleteErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, agentErr = d.svc.CreateAgent(ctx, d.access, agent.AgentInput{Name: "bot-" + name, Model: &name})
		})
		wg.Go(func() { deleteErr = d.svc.DeleteModel(ctx, d.access, name) })
		wg.Wait()
		if agentErr == nil {
			requireConflict(t, deleteErr, "model_in_use")
		} else {
			requireInvalid(t, agentErr, "model")
			require.NoError(t, deleteErr)
		}
	}
}

func TestAgentCRUD(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()
	d.model(t, "main", nil)
	d.model(t, "cheap", nil)

	ag, err := d.svc.CreateAgent(ctx, d.access, agent.AgentInput{Name: "support", Instructions: "Be kind."})
	require.NoError(t, err)
	require.Equal(t, agent.DefaultMaxTurns, ag.MaxTurns)
	require.Equal(t, agent.DefaultTimeoutSeconds, ag.TimeoutSeconds)
	require.Nil(t, ag.Model)
	require.NotNil(t, ag.ToolGroups)
	require.Empty(t, ag.ToolGroups)
	require.Nil(t, ag.Skills, "nil skills: every enabled skill")
	require.Nil(t, ag.TokenBudget)

	none, err := d.svc.CreateAgent(ctx, d.access, agent.AgentInput{
		Name: "locked-down", Model: ptr("cheap"), Skills: []string{}, ToolGroups: []string{"sandbox", "web"},
		Subagents: true, MaxTurns: 5, TokenBudget: ptr[int64](10_000), TimeoutSeconds: 60,
	})
	require.NoError(t, err)
	require.NotNil(t, none.Skills, "an empty list stays empty: no skills")
	require.Empty(t, none.Skills)
	require.Equal(t, []string{"sandbox", "web"}, none.ToolGroups)
	require.Equal(t, "cheap", *none.Model)
	require.Equal(t, int64(10_000), *none.TokenBudget)

	_, err = d.svc.CreateAgent(ctx, d.access, agent.AgentInput{Name: "support"})
	requireConflict(t, err, "name_taken")

	got, err := d.svc.GetAgent(ctx, d.access, "locked-down")
	require.NoError(t, err)
	require.Equal(t, none, got)

	upd, err := d.svc.UpdateAgent(ctx, d.access, "locked-down", agent.AgentPatch{
		Model: ptr(""), Skills: ptr([]string(nil)), TokenBudget: ptr[int64](0), MaxTurns: ptr(7),
		Instructions: ptr("Terse."),
	})
	require.NoError(t, err)
	require.Nil(t, upd.Model, `"" means the tenant default`)
	require.Nil(t, upd.Skills, "a pointer to nil means every skill")
	require.Nil(t, upd.TokenBudget, "0 removes the budget")
	require.Equal(t, 7, upd.MaxTurns)
	require.Equal(t, "Terse.", upd.Instructions)
	require.Equal(t, none.ToolGroups, upd.ToolGroups)
	require.True(t, upd.Subagents)

	upd, err = d.svc.UpdateAgent(ctx, d.access, "locked-down", agent.AgentPatch{Skills: ptr([]string{}), Model: ptr("main")})
	require.NoError(t, err)
	require.NotNil(t, upd.Skills)
	require.Empty(t, upd.Skills)
	require.Equal(t, "main", *upd.Model)

	page, err := d.svc.ListAgents(ctx, d.access, tenants.Page{})
	require.NoError(t, err)
	var names []string
	for _, a := range page.Agents {
		names = append(names, a.Name)
	}
	require.ElementsMatch(t, []string{"support", "locked-down", agent.DefaultAgentName}, names, "the default agent is always listed")

	require.NoError(t, d.svc.DeleteAgent(ctx, d.access, "support"))
	_, err = d.svc.GetAgent(ctx, d.access, "support")
	requireNotFound(t, err, "agent")
	requireNotFound(t, d.svc.DeleteAgent(ctx, d.access, "support"), "agent")
	_, err = d.svc.UpdateAgent(ctx, d.access, "support", agent.AgentPatch{MaxTurns: ptr(3)})
	requireNotFound(t, err, "agent")

	created := d.auditDiffs(t, "agent.create")
	require.Len(t, created, 3) // support, locked-down, default
	require.Equal(t, "support", created[0]["name"])
	require.Contains(t, created[0]["instructions"], "8 chars, sha256:")
	require.NotContains(t, fmt.Sprint(created[0]), "Be kind.")
	require.Nil(t, created[0]["skills"])
	require.Equal(t, []any{}, created[1]["skills"])
	updates := d.auditDiffs(t, "agent.update")
	require.Len(t, updates, 2)
	require.Equal(t, map[string]any{"from": "cheap", "to": nil}, updates[0]["model"])
	require.Equal(t, map[string]any{"from": []any{}, "to": nil}, updates[0]["skills"])
	require.Len(t, d.auditDiffs(t, "agent.delete"), 1)
}

func TestAgentValidation(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()
	cases := []struct {
		name  string
		in    agent.AgentInput
		field string
	}{
		{"bad name", agent.AgentInput{Name: "Bot"}, "name"},
		{"unknown model", agent.AgentInput{Name: "bot", Model: ptr("nope")}, "model"},
		{"bad model name", agent.AgentInput{Name: "bot", Model: ptr("No Pe")}, "model"},
		{"turns high", agent.AgentInput{Name: "bot", MaxTurns: 1001}, "max_turns"},
		{"turns negative", agent.AgentInput{Name: "bot", MaxTurns: -1}, "max_turns"},
		{"timeout high", agent.AgentInput{Name: "bot", TimeoutSeconds: 86401}, "timeout_seconds"},
		{"zero budget", agent.AgentInput{Name: "bot", TokenBudget: ptr[int64](0)}, "token_budget"},
		{"bad skill", agent.AgentInput{Name: "bot", Skills: []string{"ok", "Not OK"}}, "skills"},
		{"dup group", agent.AgentInput{Name: "bot", ToolGroups: []string{"web", "web"}}, "tool_groups"},
		{"long instructions", agent.AgentInput{Name: "bot", Instructions: strings.Repeat("é", agent.MaxInstructions+1)}, "instructions"},
	}
	for _, c := range cases {
		_, err := d.svc.CreateAgent(ctx, d.access, c.in)
		requireInvalid(t, err, c.field)
	}
	_, err := d.svc.CreateAgent(ctx, d.access, agent.AgentInput{Name: "bot", MaxTurns: 1000, TimeoutSeconds: 86400, Instructions: strings.Repeat("é", agent.MaxInstructions)})
	require.NoError(t, err)
	for _, p := range []struct {
		patch agent.AgentPatch
		field string
	}{
		{agent.AgentPatch{MaxTurns: ptr(0)}, "max_turns"},
		{agent.AgentPatch{TimeoutSeconds: ptr(0)}, "timeout_seconds"},
		{agent.AgentPatch{Model: ptr("nope")}, "model"},
		{agent.AgentPatch{TokenBudget: ptr[int64](-5)}, "token_budget"},
	} {
		_, err := d.svc.UpdateAgent(ctx, d.access, "bot", p.patch)
		requireInvalid(t, err, p.field)
	}
}

func TestDefaultAgentCreatedOnce(t *testing.T) {
	t.Parallel()
	d := newDefs(t)
	ctx := t.Context()

	agents := make([]agent.Agent, 10)
	errs := make([]error, 10)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() { agents[i], errs[i] = d.svc.AgentByName(ctx, d.access.Tenant.ID, agent.DefaultAgentName) })
	}
	wg.Wait()
	for i := range agents {
		require.NoError(t, errs[i])
		require.Equal(t, agents[0].ID, agents[i].ID)
	}
	ag := agents[0]
	require.Equal(t, agent.DefaultAgentName, ag.Name)
	require.Equal(t, 50, ag.MaxTurns)
	require.Equal(t, 600, ag.TimeoutSeconds)
	require.Nil(t, ag.Model)
	require.Nil(t, ag.Skills)

	var n int
	require.NoError(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM agents WHERE tenant_id = $1`, d.access.Tenant.ID).Scan(&n))
	require.Equal(t, 1, n)
	created := d.auditDiffs(t, "agent.create")
	require.Len(t, created, 1)
	page, err := audit.List(ctx, d.pool, d.access.Tenant.ID, audit.Filter{Action: "agent.create"})
	require.NoError(t, err)
	require.Equal(t, policy.KindSystem, page.Events[0].ActorKind)

	_, err = d.svc.AgentByName(ctx, d.access.Tenant.ID, "other")
	requireNotFound(t, err, "agent")

	err = d.svc.DeleteAgent(ctx, d.access, agent.DefaultAgentName)
	requireConflict(t, err, "default_agent")

	// The default agent can be changed, in a tenant where it was never used too.
	other := defs{svc: d.svc, pool: d.pool, access: newTenant(t, d.pool)}
	upd, err := other.svc.UpdateAgent(ctx, other.access, agent.DefaultAgentName, agent.AgentPatch{Instructions: ptr("Hi.")})
	require.NoError(t, err)
	require.Equal(t, "Hi.", upd.Instructions)
	require.Len(t, other.auditDiffs(t, "agent.create"), 1)
	require.Len(t, other.auditDiffs(t, "agent.update"), 1)
}

func TestDefinitionsTenantIsolation(t *testing.T) {
	t.Parallel()
	a := newDefs(t)
	b := defs{svc: a.svc, pool: a.pool, access: newTenant(t, a.pool)}
	ctx := t.Context()
	a.model(t, "shared-name", nil)
	_, err := a.svc.CreateAgent(ctx, a.access, agent.AgentInput{Name: "bot", Model: ptr("shared-name")})
	require.NoError(t, err)

	// B sees none of A's definitions and cannot touch them.
	_, err = b.svc.GetModel(ctx, b.access, "shared-name")
	requireNotFound(t, err, "model")
	_, err = b.svc.UpdateModel(ctx, b.access, "shared-name", agent.ModelPatch{Model: ptr("x")})
	requireNotFound(t, err, "model")
	requireNotFound(t, b.svc.DeleteModel(ctx, b.access, "shared-name"), "model")
	_, err = b.svc.GetAgent(ctx, b.access, "bot")
	requireNotFound(t, err, "agent")
	requireNotFound(t, b.svc.DeleteAgent(ctx, b.access, "bot"), "agent")
	_, err = b.svc.CreateAgent(ctx, b.access, agent.AgentInput{Name: "bot", Model: ptr("shared-name")})
	requireInvalid(t, err, "model")
	_, err = b.svc.ModelFor(ctx, b.access.Tenant.ID, agent.Agent{})
	requireNotFound(t, err, "model")
	models, err := b.svc.ListModels(ctx, b.access, tenants.Page{})
	require.NoError(t, err)
	require.Empty(t, models.Models)

	// Same names in B are independent, defaults too.
	b.model(t, "shared-name", nil)
	_, err = b.svc.CreateAgent(ctx, b.access, agent.AgentInput{Name: "bot"})
	require.NoError(t, err)
	require.Equal(t, []string{"shared-name"}, a.defaults(t))
	require.Equal(t, []string{"shared-name"}, b.defaults(t))
	require.NoError(t, b.svc.DeleteAgent(ctx, b.access, "bot"))
	require.NoError(t, b.svc.DeleteModel(ctx, b.access, "shared-name"))
	got, err := a.svc.GetAgent(ctx, a.access, "bot")
	require.NoError(t, err)
	require.Equal(t, "shared-name", *got.Model)
	_, err = a.svc.GetModel(ctx, a.access, "shared-name")
	require.NoError(t, err)
	require.False(t, errors.Is(err, agent.ErrNotFound))
}
