package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

const sectionAgents = "agents"

// instructionsPreview is how much of an agent's instructions the list shows.
const instructionsPreview = 80

// agentRoutes mirrors the agent-* API operations and their permissions.
func (c *Console) agentRoutes(r chi.Router) {
	r.With(c.need(policy.AgentRead)).Get("/agents", c.agentsPage)
	r.Group(func(r chi.Router) {
		r.Use(c.need(policy.AgentWrite))
		r.Post("/agents", c.createAgent)
		r.Delete("/agents/{agent}", c.deleteAgent)
		r.Post("/agents/{agent}/delete", c.deleteAgent)
	})
}

func (c *Console) agentsPage(w http.ResponseWriter, r *http.Request) {
	c.showAgents(w, r, http.StatusOK, ui.AgentsView{})
}

// showAgents renders the agents page around what a form left in v. The
// model select offers the tenant's endpoints (first page: a tenant with
// more than that types the name through the API).
func (c *Console) showAgents(w http.ResponseWriter, r *http.Request, status int, v ui.AgentsView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	page, err := c.deps.Agents.ListAgents(ctx, a, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant = a.Tenant.Slug
	v.CanWrite = c.can(ctx, policy.AgentWrite)
	for _, ag := range page.Agents {
		row := ui.AgentRow{
			Name: ag.Name, Instructions: preview(ag.Instructions, instructionsPreview), MaxTurns: ag.MaxTurns,
			TimeoutSeconds: ag.TimeoutSeconds, Skills: skillsLabel(ag.Skills), Subagents: ag.Subagents,
			Deletable: ag.Name != agent.DefaultAgentName,
		}
		if ag.Model != nil {
			row.Model = *ag.Model
		}
		v.Agents = append(v.Agents, row)
	}
	// Choosing a model needs to see them; without model:read the select
	// offers only the tenant default.
	if v.CanWrite && c.can(ctx, policy.ModelRead) {
		models, err := c.deps.Agents.ListModels(ctx, a, tenants.Page{Limit: 200})
		if err != nil {
			c.fail(w, r, err)
			return
		}
		for _, m := range models.Models {
			v.Models = append(v.Models, m.Name)
		}
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionAgents), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "Agents", sectionAgents, ui.AgentsPage(v))
}

func (c *Console) createAgent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := ui.AgentForm{
		Name: strings.TrimSpace(r.PostFormValue("name")), Model: r.PostFormValue("model"),
		Instructions: r.PostFormValue("instructions"), MaxTurns: strings.TrimSpace(r.PostFormValue("max_turns")),
	}
	in := agent.AgentInput{Name: form.Name, Instructions: form.Instructions}
	if form.Model != "" {
		in.Model = &form.Model
	}
	if form.MaxTurns != "" {
		n, err := strconv.Atoi(form.MaxTurns)
		if err != nil || n < 1 {
			c.showAgents(w, r, http.StatusUnprocessableEntity, ui.AgentsView{Form: form, Notice: invalid("max_turns", "must be a whole number from 1 to 1000")})
			return
		}
		in.MaxTurns = n
	}
	ag, err := c.deps.Agents.CreateAgent(ctx, visitFrom(ctx).access, in)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showAgents(w, r, status, ui.AgentsView{Form: form, Notice: n})
		return
	}
	c.showAgents(w, r, http.StatusOK, ui.AgentsView{Notice: done(fmt.Sprintf("Created the agent “%s”.", ag.Name))})
}

func (c *Console) deleteAgent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := chi.URLParam(r, "agent")
	if err := c.deps.Agents.DeleteAgent(ctx, visitFrom(ctx).access, name); err != nil {
		status, n := c.describe(ctx, err)
		c.showAgents(w, r, status, ui.AgentsView{Notice: n})
		return
	}
	c.showAgents(w, r, http.StatusOK, ui.AgentsView{Notice: done(fmt.Sprintf("Deleted the agent “%s”.", name))})
}

// skillsLabel renders an agent's skills: nil is every enabled skill.
func skillsLabel(skills []string) string {
	switch {
	case skills == nil:
		return "all enabled"
	case len(skills) == 0:
		return "none"
	}
	return strings.Join(skills, ", ")
}

// preview shortens text to at most n characters on one line.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
