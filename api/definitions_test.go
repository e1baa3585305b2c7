package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

func TestModelsCRUD(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug + "/models"

	r := h.ok(t, http.StatusCreated, http.MethodPost, base, owner.Key, map[string]any{
		"name": "main", "base_url": "https://llm.example.com/v1", "model": "gpt-4o", "api_key_secret": "OPENAI_API_KEY",
	})
	require.Equal(t, "main", r.str("name"))
	require.Equal(t, "https://llm.example.com/v1", r.str("base_url"))
	require.Equal(t, "gpt-4o", r.str("model"))
	require.Equal(t, "OPENAI_API_KEY", r.str("api_key_secret"))
	require.Equal(t, true, r.JSON["default"], "the first endpoint becomes the default")
	require.EqualValues(t, 128000, r.JSON["context_window"])
	require.Equal(t, true, r.JSON["supports_tools"])
	for _, k := range []string{"id", "created_at", "updated_at"} {
		require.NotEmpty(t, r.str(k), k)
	}

	r = h.ok(t, http.StatusCreated, http.MethodPost, base, owner.Key, map[string]any{
		"name": "local", "base_url": "http://127.0.0.1:8081", "model": "llama", "default": true,
		"context_window": 8192, "supports_tools": false,
	})
	require.Equal(t, true, r.JSON["default"])
	require.Nil(t, r.JSON["api_key_secret"])
	require.Contains(t, r.JSON, "api_key_secret", "null, not absent")

	list := h.ok(t, http.StatusOK, http.MethodGet, base, owner.Key, nil).list("models")
	require.Len(t, list, 2)
	require.Equal(t, "main", list[0]["name"])
	require.Equal(t, false, list[0]["default"], "the new default cleared the old one")

	requireProblem(t, h.do(t, http.MethodPost, base, owner.Key, map[string]any{
		"name": "main", "base_url": "https://x.example.com", "model": "m",
	}), http.StatusConflict, "name_taken")

	r = h.ok(t, http.StatusOK, http.MethodPatch, base+"/main", owner.Key, map[string]any{"api_key_secret": nil, "default": true})
	require.Nil(t, r.JSON["api_key_secret"])
	require.Equal(t, true, r.JSON["default"])
	r = h.ok(t, http.StatusOK, http.MethodPatch, base+"/main", owner.Key, map[string]any{"model": "gpt-4.1"})
	require.Equal(t, "gpt-4.1", r.str("model"))
	require.Equal(t, true, r.JSON["default"], "absent fields stay")
	r = h.ok(t, http.StatusOK, http.MethodGet, base+"/local", owner.Key, nil)
	require.Equal(t, false, r.JSON["default"])

	// An endpoint an agent names cannot be deleted.
	h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants/"+tn.Slug+"/agents", owner.Key, map[string]any{"name": "bot", "model": "local"})
	requireProblem(t, h.do(t, http.MethodDelete, base+"/local", owner.Key, nil), http.StatusConflict, "model_in_use")
	h.ok(t, http.StatusNoContent, http.MethodDelete, "/v1/tenants/"+tn.Slug+"/agents/bot", owner.Key, nil)
	h.ok(t, http.StatusNoContent, http.MethodDelete, base+"/local", owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, base+"/local", owner.Key, nil), http.StatusNotFound, "model_not_found")
	requireProblem(t, h.do(t, http.MethodPatch, base+"/local", owner.Key, map[string]any{"model": "x"}), http.StatusNotFound, "model_not_found")
	requireProblem(t, h.do(t, http.MethodDelete, base+"/local", owner.Key, nil), http.StatusNotFound, "model_not_found")

	events := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+tn.Slug+"/audit-events?limit=200", owner.Key, nil).list("events")
	var actions []string
	for _, e := range events {
		if a, _ := e["action"].(string); strings.HasPrefix(a, "model.") {
			actions = append(actions, a)
		}
	}
	require.ElementsMatch(t, []string{"model.create", "model.create", "model.update", "model.update", "model.delete"}, actions)
}

func TestAgentsCRUD(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug + "/agents"
	h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants/"+tn.Slug+"/models", owner.Key,
		map[string]any{"name": "main", "base_url": "https://llm.example.com/v1", "model": "gpt-4o"})

	r := h.ok(t, http.StatusCreated, http.MethodPost, base, owner.Key, map[string]any{"name": "support"})
	require.Equal(t, "support", r.str("name"))
	require.Nil(t, r.JSON["model"])
	require.Nil(t, r.JSON["skills"], "omitted skills: every enabled skill (null)")
	require.Equal(t, []any{}, r.JSON["tool_groups"])
	require.EqualValues(t, 50, r.JSON["max_turns"])
	require.EqualValues(t, 600, r.JSON["timeout_seconds"])
	require.Nil(t, r.JSON["token_budget"])
	require.Equal(t, false, r.JSON["subagents"])
	for _, k := range []string{"id", "created_at", "updated_at"} {
		require.NotEmpty(t, r.str(k), k)
	}

	r = h.ok(t, http.StatusCreated, http.MethodPost, base, owner.Key, map[string]any{
		"name": "narrow", "model": "main", "instructions": "Be brief.", "max_turns": 5, "subagents": true,
		"skills": []string{}, "tool_groups": []string{"sandbox"}, "token_budget": 5000, "timeout_seconds": 30,
	})
	require.Equal(t, []any{}, r.JSON["skills"], "[] means no skills, distinct from null")
	require.Equal(t, []any{"sandbox"}, r.JSON["tool_groups"])
	require.Equal(t, "main", r.str("model"))
	require.EqualValues(t, 5000, r.JSON["token_budget"])

	requireProblem(t, h.do(t, http.MethodPost, base, owner.Key, map[string]any{"name": "narrow"}), http.StatusConflict, "name_taken")

	r = h.ok(t, http.StatusOK, http.MethodPatch, base+"/narrow", owner.Key, map[string]any{"skills": nil, "token_budget": nil, "model": nil})
	require.Nil(t, r.JSON["skills"])
	require.Nil(t, r.JSON["token_budget"])
	require.Nil(t, r.JSON["model"])
	require.Equal(t, "Be brief.", r.str("instructions"), "absent fields stay")
	r = h.ok(t, http.StatusOK, http.MethodPatch, base+"/narrow", owner.Key, map[string]any{"skills": []string{"pdf"}, "max_turns": 9})
	require.Equal(t, []any{"pdf"}, r.JSON["skills"])
	require.EqualValues(t, 9, r.JSON["max_turns"])
	r = h.ok(t, http.StatusOK, http.MethodGet, base+"/narrow", owner.Key, nil)
	require.Equal(t, []any{"pdf"}, r.JSON["skills"])

	// The default agent exists without being created and cannot be deleted.
	r = h.ok(t, http.StatusOK, http.MethodGet, base+"/default", owner.Key, nil)
	require.Equal(t, "default", r.str("name"))
	requireProblem(t, h.do(t, http.MethodDelete, base+"/default", owner.Key, nil), http.StatusConflict, "default_agent")
	names := map[string]bool{}
	for _, a := range h.ok(t, http.StatusOK, http.MethodGet, base, owner.Key, nil).list("agents") {
		names[a["name"].(string)] = true
	}
	require.Equal(t, map[string]bool{"default": true, "support": true, "narrow": true}, names)

	h.ok(t, http.StatusNoContent, http.MethodDelete, base+"/support", owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, base+"/support", owner.Key, nil), http.StatusNotFound, "agent_not_found")
}

func TestDefinitionsValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	models := "/v1/tenants/" + tn.Slug + "/models"
	agents := "/v1/tenants/" + tn.Slug + "/agents"

	cases := []struct {
		name, method, path string
		body               any
		want               []string
	}{
		{"model schema", http.MethodPost, models,
			map[string]any{"name": "Main!", "base_url": "https://x.example.com", "api_key_secret": "sk-123", "context_window": 0},
			// A missing property is reported on its parent, naming it.
			[]string{"body.name", "body", "body.api_key_secret", "body.context_window"}},
		{"model base_url scheme", http.MethodPost, models,
			map[string]any{"name": "m", "base_url": "ftp://x.example.com", "model": "m"}, []string{"body.base_url"}},
		{"model base_url credentials", http.MethodPost, models,
			map[string]any{"name": "m", "base_url": "https://u:p@x.example.com", "model": "m"}, []string{"body.base_url"}},
		{"model patch", http.MethodPatch, models + "/m",
			map[string]any{"api_key_secret": "no-dashes", "context_window": -1}, []string{"body.api_key_secret", "body.context_window"}},
		{"agent schema", http.MethodPost, agents,
			map[string]any{"name": "Bot", "max_turns": 0, "timeout_seconds": 90000, "token_budget": 0, "skills": []string{"Bad Skill"}},
			[]string{"body.name", "body.max_turns", "body.timeout_seconds", "body.token_budget", "body.skills[0]"}},
		{"agent unknown model", http.MethodPost, agents, map[string]any{"name": "bot", "model": "nope"}, []string{"body.model"}},
		{"agent patch", http.MethodPatch, agents + "/default",
			map[string]any{"max_turns": 1001, "token_budget": -1}, []string{"body.max_turns", "body.token_budget"}},
		{"agent bad path", http.MethodGet, agents + "/Not_Valid", nil, []string{"path.agent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, c.method, c.path, owner.Key, c.body)
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
			require.ElementsMatch(t, c.want, errorLocations(r), "%s", r.Raw)
		})
	}
}

func TestDefinitionsPermissions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	viewer := h.createKey(t, tn.Slug, owner.Key, policy.RoleViewer)
	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	models := "/v1/tenants/" + tn.Slug + "/models"
	agents := "/v1/tenants/" + tn.Slug + "/agents"
	model := map[string]any{"name": "main", "base_url": "https://llm.example.com", "model": "m"}

	requireProblem(t, h.do(t, http.MethodPost, models, viewer.Key, model), http.StatusForbidden, "forbidden")
	requireProblem(t, h.do(t, http.MethodPost, agents, viewer.Key, map[string]any{"name": "bot"}), http.StatusForbidden, "forbidden")
	requireProblem(t, h.do(t, http.MethodPatch, agents+"/default", viewer.Key, map[string]any{"max_turns": 3}), http.StatusForbidden, "forbidden")
	// Developers manage agents but not model endpoints.
	requireProblem(t, h.do(t, http.MethodPost, models, dev.Key, model), http.StatusForbidden, "forbidden")
	h.ok(t, http.StatusCreated, http.MethodPost, agents, dev.Key, map[string]any{"name": "bot"})
	h.ok(t, http.StatusCreated, http.MethodPost, models, owner.Key, model)

	require.Len(t, h.ok(t, http.StatusOK, http.MethodGet, models, viewer.Key, nil).list("models"), 1)
	require.Len(t, h.ok(t, http.StatusOK, http.MethodGet, agents, viewer.Key, nil).list("agents"), 2)
	h.ok(t, http.StatusOK, http.MethodGet, models+"/main", viewer.Key, nil)
	h.ok(t, http.StatusOK, http.MethodGet, agents+"/bot", viewer.Key, nil)
}

// Within its own tenant, a key cannot reach another tenant's definitions:
// they are simply not found, and agents cannot name them.
func TestForeignDefinitionsAreNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a, aKey := h.tenantWithOwner(t)
	b, bKey := h.tenantWithOwner(t)
	h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants/"+b.Slug+"/models", bKey.Key,
		map[string]any{"name": "b-model", "base_url": "https://llm.example.com", "model": "m"})
	h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants/"+b.Slug+"/agents", bKey.Key, map[string]any{"name": "b-agent"})

	own := "/v1/tenants/" + a.Slug
	requireProblem(t, h.do(t, http.MethodGet, own+"/models/b-model", aKey.Key, nil), http.StatusNotFound, "model_not_found")
	requireProblem(t, h.do(t, http.MethodDelete, own+"/models/b-model", aKey.Key, nil), http.StatusNotFound, "model_not_found")
	requireProblem(t, h.do(t, http.MethodGet, own+"/agents/b-agent", aKey.Key, nil), http.StatusNotFound, "agent_not_found")
	requireProblem(t, h.do(t, http.MethodPatch, own+"/agents/b-agent", aKey.Key, map[string]any{"max_turns": 2}), http.StatusNotFound, "agent_not_found")
	r := h.do(t, http.MethodPost, own+"/agents", aKey.Key, map[string]any{"name": "x", "model": "b-model"})
	requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"body.model"}, errorLocations(r))
	require.Empty(t, h.ok(t, http.StatusOK, http.MethodGet, own+"/models", aKey.Key, nil).list("models"))
}
