package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web"
)

// newAgentsFixture is newFixture with the agent service wired, so the
// model endpoint and agent pages exist.
func newAgentsFixture(t *testing.T) (*fixture, *agent.Service) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool := pgtest.Pool(t)
	svc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	agents, err := agent.NewService(pool, agent.Config{}, nil, logger)
	require.NoError(t, err)
	return serveConsole(t, web.Deps{Tenants: svc, Agents: agents}), agents
}

func TestModelsPage(t *testing.T) {
	t.Parallel()
	f, agents := newAgentsFixture(t)
	tn := f.tenant(t, "models")
	c, _ := f.login(t, f.member(t, tn, "admin", policy.RoleAdmin))
	page := "/console/t/" + tn.Slug + "/models"

	res, doc := c.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("nav-models")).Length())
	require.Equal(t, 1, doc.Find(testID("nav-agents")).Length())
	require.Equal(t, 1, doc.Find(testID("create-model-form")).Length())
	require.Zero(t, doc.Find(testID("model-row")).Length())

	form := url.Values{"name": {"main"}, "base_url": {"https://llm.example.com/v1"}, "model": {"gpt-4o"}, "api_key_secret": {"OPENAI_API_KEY"}}
	res, doc = c.htmx(http.MethodPost, page, form)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find("html > head title").Length(), "an htmx request gets the fragment")
	require.Contains(t, doc.Find(testID("flash")).Text(), "main")
	row := doc.Find(testID("model-row") + `[data-name="main"]`)
	require.Equal(t, "true", row.AttrOr("data-default", ""), "the first endpoint becomes the default")
	require.Contains(t, row.Text(), "OPENAI_API_KEY")

	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"local"}, "base_url": {"http://127.0.0.1:8081"}, "model": {"llama"}, "context_window": {"8192"}, "no_tools": {"on"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	local := doc.Find(testID("model-row") + `[data-name="local"]`)
	require.Equal(t, "false", local.AttrOr("data-default", ""))
	m, err := agents.GetModel(t.Context(), systemAccess(tn), "local")
	require.NoError(t, err)
	require.Equal(t, 8192, m.ContextWindow)
	require.False(t, m.SupportsTools)

	// Errors come back inline with the typed values kept.
	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"bad"}, "base_url": {"ftp://x"}, "model": {"m"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_base_url", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Equal(t, "ftp://x", doc.Find(testID("model-base-url")).AttrOr("value", ""))
	res, doc = c.htmx(http.MethodPost, page, form)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, "name_taken", doc.Find(testID("form-error")).AttrOr("data-code", ""))

	// Make "local" the default.
	res, doc = c.htmx(http.MethodPost, local.Find(`form[hx-post]`).AttrOr("hx-post", ""), nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "true", doc.Find(testID("model-row")+`[data-name="local"]`).AttrOr("data-default", ""))
	require.Equal(t, "false", doc.Find(testID("model-row")+`[data-name="main"]`).AttrOr("data-default", ""))

	// An endpoint in use cannot be deleted; a free one can.
	_, err = agents.CreateAgent(t.Context(), systemAccess(tn), agent.AgentInput{Name: "bot", Model: pointerTo("main")})
	require.NoError(t, err)
	del := doc.Find(testID("model-row")+`[data-name="main"] form[hx-delete]`).AttrOr("hx-delete", "")
	require.Equal(t, page+"/main", del)
	res, doc = c.htmx(http.MethodDelete, del, nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, "model_in_use", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	res, doc = c.htmx(http.MethodDelete, page+"/local", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("model-row")+`[data-name="local"]`).Length())

	// Without JavaScript: the POST twin of delete.
	require.NoError(t, agents.DeleteAgent(t.Context(), systemAccess(tn), "bot"))
	res, _ = c.send(http.MethodPost, page+"/main/delete", url.Values{"csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	list, err := agents.ListModels(t.Context(), systemAccess(tn), pageAll)
	require.NoError(t, err)
	require.Empty(t, list.Models)
}

func TestModelsPagePermissions(t *testing.T) {
	t.Parallel()
	f, agents := newAgentsFixture(t)
	tn := f.tenant(t, "models-perm")
	_, err := agents.CreateModel(t.Context(), systemAccess(tn), agent.ModelInput{Name: "main", BaseURL: "https://llm.example.com", Model: "m"})
	require.NoError(t, err)
	page := "/console/t/" + tn.Slug + "/models"

	// A developer reads endpoints but gets no controls and cannot post.
	dc, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	res, doc := dc.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("model-row")+`[data-name="main"]`).Length())
	require.Zero(t, doc.Find(testID("create-model-form")).Length())
	require.Zero(t, doc.Find(testID("model-delete")).Length())
	res, _ = dc.htmx(http.MethodPost, page, url.Values{"name": {"sneaky"}, "base_url": {"https://x.example.com"}, "model": {"m"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = dc.htmx(http.MethodDelete, page+"/main", nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	list, err := agents.ListModels(t.Context(), systemAccess(tn), pageAll)
	require.NoError(t, err)
	require.Len(t, list.Models, 1)

	// Another tenant's member does not learn the tenant exists.
	other := f.tenant(t, "models-other")
	oc, _ := f.login(t, f.member(t, other, "owner", policy.RoleOwner))
	res, _ = oc.get(page)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

func TestAgentsPage(t *testing.T) {
	t.Parallel()
	f, agents := newAgentsFixture(t)
	tn := f.tenant(t, "agents")
	_, err := agents.CreateModel(t.Context(), systemAccess(tn), agent.ModelInput{Name: "main", BaseURL: "https://llm.example.com", Model: "m"})
	require.NoError(t, err)
	c, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	page := "/console/t/" + tn.Slug + "/agents"

	res, doc := c.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	def := doc.Find(testID("agent-row") + `[data-name="default"]`)
	require.Equal(t, 1, def.Length(), "the default agent is always listed")
	require.Zero(t, def.Find(testID("agent-delete")).Length(), "and cannot be deleted")
	options := doc.Find(testID("agent-model-select") + " option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") })
	require.Equal(t, []string{"", "main"}, options)

	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"support"}, "model": {"main"}, "instructions": {"Be kind."}, "max_turns": {"12"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	row := doc.Find(testID("agent-row") + `[data-name="support"]`)
	require.Equal(t, "main", row.Find(testID("agent-model")).Text())
	require.Equal(t, "12", row.Find(testID("agent-max-turns")).Text())
	ag, err := agents.GetAgent(t.Context(), systemAccess(tn), "support")
	require.NoError(t, err)
	require.Equal(t, "Be kind.", ag.Instructions)

	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"x"}, "max_turns": {"5000"}, "instructions": {"kept"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_max_turns", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Equal(t, "kept", doc.Find(testID("agent-instructions")).Text())

	res, doc = c.htmx(http.MethodDelete, row.Find("form[hx-delete]").AttrOr("hx-delete", ""), nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("agent-row")+`[data-name="support"]`).Length())
	res, doc = c.htmx(http.MethodDelete, page+"/default", nil)
	require.Equal(t, http.StatusConflict, res.StatusCode)
	require.Equal(t, "default_agent", doc.Find(testID("form-error")).AttrOr("data-code", ""))

	// A viewer has neither the form nor the right.
	vc, _ := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	res, doc = vc.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("create-agent-form")).Length())
	res, _ = vc.htmx(http.MethodPost, page, url.Values{"name": {"sneaky"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
}

func pointerTo[T any](v T) *T { return &v }
