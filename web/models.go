package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

const sectionModels = "models"

// modelRoutes mirrors the model-* API operations and their permissions.
func (c *Console) modelRoutes(r chi.Router) {
	r.With(c.need(policy.ModelRead)).Get("/models", c.modelsPage)
	r.Group(func(r chi.Router) {
		r.Use(c.need(policy.ModelWrite))
		r.Post("/models", c.createModel)
		r.Post("/models/{model}/default", c.makeDefaultModel)
		r.Delete("/models/{model}", c.deleteModel)
		r.Post("/models/{model}/delete", c.deleteModel)
	})
}

func (c *Console) modelsPage(w http.ResponseWriter, r *http.Request) {
	c.showModels(w, r, http.StatusOK, ui.ModelsView{})
}

// showModels renders the endpoints page around what a form left in v.
func (c *Console) showModels(w http.ResponseWriter, r *http.Request, status int, v ui.ModelsView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	page, err := c.deps.Agents.ListModels(ctx, a, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant = a.Tenant.Slug
	v.CanWrite = c.can(ctx, policy.ModelWrite)
	for _, m := range page.Models {
		row := ui.ModelRow{
			Name: m.Name, Model: m.Model, BaseURL: m.BaseURL, Default: m.Default,
			ContextWindow: m.ContextWindow, SupportsTools: m.SupportsTools, Created: fmtDate(m.CreatedAt),
		}
		if m.APIKeySecret != nil {
			row.KeySecret = *m.APIKeySecret
		}
		v.Models = append(v.Models, row)
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionModels), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "Model endpoints", sectionModels, ui.ModelsPage(v))
}

func (c *Console) createModel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := ui.ModelForm{
		Name: strings.TrimSpace(r.PostFormValue("name")), BaseURL: strings.TrimSpace(r.PostFormValue("base_url")),
		Model: strings.TrimSpace(r.PostFormValue("model")), KeySecret: strings.TrimSpace(r.PostFormValue("api_key_secret")),
		ContextWindow: strings.TrimSpace(r.PostFormValue("context_window")),
		NoTools:       r.PostFormValue("no_tools") == "on", Default: r.PostFormValue("default") == "on",
	}
	in, notice := parseModelForm(form)
	if !notice.IsZero() {
		c.showModels(w, r, http.StatusUnprocessableEntity, ui.ModelsView{Form: form, Notice: notice})
		return
	}
	m, err := c.deps.Agents.CreateModel(ctx, visitFrom(ctx).access, in)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showModels(w, r, status, ui.ModelsView{Form: form, Notice: n})
		return
	}
	c.showModels(w, r, http.StatusOK, ui.ModelsView{Notice: done(fmt.Sprintf("Added the model endpoint “%s”.", m.Name))})
}

// parseModelForm turns the form into a service input; the service checks
// the values themselves. An unticked "make default" leaves the choice to
// the service (default only when the tenant has none).
func parseModelForm(f ui.ModelForm) (agent.ModelInput, ui.Notice) {
	supportsTools := !f.NoTools
	in := agent.ModelInput{Name: f.Name, BaseURL: f.BaseURL, Model: f.Model, SupportsTools: &supportsTools}
	if f.KeySecret != "" {
		in.APIKeySecret = &f.KeySecret
	}
	if f.Default {
		in.Default = &f.Default
	}
	if f.ContextWindow != "" {
		n, err := strconv.Atoi(f.ContextWindow)
		if err != nil || n < 1 {
			return agent.ModelInput{}, invalid("context_window", "must be a positive whole number")
		}
		in.ContextWindow = n
	}
	return in, ui.Notice{}
}

func (c *Console) makeDefaultModel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	yes := true
	m, err := c.deps.Agents.UpdateModel(ctx, visitFrom(ctx).access, chi.URLParam(r, "model"), agent.ModelPatch{Default: &yes})
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showModels(w, r, status, ui.ModelsView{Notice: n})
		return
	}
	c.showModels(w, r, http.StatusOK, ui.ModelsView{Notice: done(fmt.Sprintf("“%s” is now the default endpoint.", m.Name))})
}

func (c *Console) deleteModel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := chi.URLParam(r, "model")
	if err := c.deps.Agents.DeleteModel(ctx, visitFrom(ctx).access, name); err != nil {
		status, n := c.describe(ctx, err)
		c.showModels(w, r, status, ui.ModelsView{Notice: n})
		return
	}
	c.showModels(w, r, http.StatusOK, ui.ModelsView{Notice: done(fmt.Sprintf("Deleted the model endpoint “%s”.", name))})
}
