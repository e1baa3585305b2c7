package api_test

import (
	"crypto/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// testVault is the harness's secrets vault, under a random master key.
func testVault(t *testing.T, pool *pgxpool.Pool) *secrets.Vault {
	t.Helper()
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	v, err := secrets.NewVault(pool, key, nil)
	require.NoError(t, err)
	return v
}

func TestSecretLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug + "/secrets"
	value := "sk-" + randomHex(20)

	r := h.ok(t, http.StatusOK, http.MethodPut, base+"/OPENAI_API_KEY", owner.Key, map[string]any{"value": value})
	require.ElementsMatch(t, []string{"name", "version", "fingerprint", "updated_at"}, jsonKeys(r.JSON), "body: %s", r.Raw)
	require.Equal(t, "OPENAI_API_KEY", r.str("name"))
	require.EqualValues(t, 1, r.JSON["version"])
	require.Regexp(t, `^sha256:[0-9a-f]{12}$`, r.str("fingerprint"))
	first := r.str("fingerprint")

	rotated := value + "-rotated"
	r = h.ok(t, http.StatusOK, http.MethodPut, base+"/OPENAI_API_KEY", owner.Key, map[string]any{"value": rotated})
	require.EqualValues(t, 2, r.JSON["version"])
	require.NotEqual(t, first, r.str("fingerprint"))
	h.ok(t, http.StatusOK, http.MethodPut, base+"/OTHER", owner.Key, map[string]any{"value": value})

	list := h.ok(t, http.StatusOK, http.MethodGet, base, owner.Key, nil)
	items := list.list("secrets")
	require.Len(t, items, 2)
	require.Equal(t, "OPENAI_API_KEY", items[0]["name"])
	require.EqualValues(t, 2, items[0]["version"])
	require.Equal(t, "OTHER", items[1]["name"])
	require.ElementsMatch(t, []string{"name", "version", "fingerprint", "updated_at"}, jsonKeys(items[0]))

	// Paging by cursor.
	p1 := h.ok(t, http.StatusOK, http.MethodGet, base+"?limit=1", owner.Key, nil)
	require.Len(t, p1.list("secrets"), 1)
	require.NotEmpty(t, p1.str("next_cursor"))
	p2 := h.ok(t, http.StatusOK, http.MethodGet, base+"?limit=1&cursor="+p1.str("next_cursor"), owner.Key, nil)
	require.Equal(t, "OTHER", p2.list("secrets")[0]["name"])
	requireProblem(t, h.do(t, http.MethodGet, base+"?cursor=%21%21", owner.Key, nil), http.StatusUnprocessableEntity, "invalid_cursor")

	// The audit log records the puts without the value.
	events := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+tn.Slug+"/audit-events?action=secret.put", owner.Key, nil)
	require.Len(t, events.list("events"), 3)

	h.ok(t, http.StatusNoContent, http.MethodDelete, base+"/OPENAI_API_KEY", owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodDelete, base+"/OPENAI_API_KEY", owner.Key, nil), http.StatusNotFound, "secret_not_found")
	require.Len(t, h.ok(t, http.StatusOK, http.MethodGet, base, owner.Key, nil).list("secrets"), 1)

	for _, raw := range [][]byte{list.Raw, p1.Raw, p2.Raw, events.Raw, []byte(h.logs.String())} {
		require.NotContains(t, string(raw), value, "a value never leaves the vault")
	}
}

func TestSecretPermissions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	viewer := h.createKey(t, tn.Slug, owner.Key, policy.RoleViewer)
	developer := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	admin := h.createKey(t, tn.Slug, owner.Key, policy.RoleAdmin)
	base := "/v1/tenants/" + tn.Slug + "/secrets"
	body := map[string]any{"value": "v"}

	requireProblem(t, h.do(t, http.MethodGet, base, viewer.Key, nil), http.StatusForbidden, "forbidden")
	requireProblem(t, h.do(t, http.MethodPut, base+"/X", viewer.Key, body), http.StatusForbidden, "forbidden")
	// Developers see metadata but cannot change secrets.
	h.ok(t, http.StatusOK, http.MethodGet, base, developer.Key, nil)
	requireProblem(t, h.do(t, http.MethodPut, base+"/X", developer.Key, body), http.StatusForbidden, "forbidden")
	requireProblem(t, h.do(t, http.MethodDelete, base+"/X", developer.Key, nil), http.StatusForbidden, "forbidden")
	h.ok(t, http.StatusOK, http.MethodPut, base+"/X", admin.Key, body)
	h.ok(t, http.StatusNoContent, http.MethodDelete, base+"/X", admin.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, base, "", nil), http.StatusUnauthorized, "unauthenticated")
}

func TestSecretValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug + "/secrets"

	for _, c := range []struct {
		name, method, path string
		body               any
		locations          []string
	}{
		{"unknown field", http.MethodPut, "/X", map[string]any{"value": "v", "bogus": 1}, []string{"body.bogus"}},
		{"no value", http.MethodPut, "/X", map[string]any{}, []string{"body"}},
		{"empty value", http.MethodPut, "/X", map[string]any{"value": ""}, []string{"body.value"}},
		{"value too long", http.MethodPut, "/X", map[string]any{"value": strings.Repeat("v", 64<<10+1)}, []string{"body.value"}},
		{"name with dash", http.MethodPut, "/BAD-NAME", map[string]any{"value": "v"}, []string{"path.name"}},
		{"name starting with a digit", http.MethodDelete, "/1X", nil, []string{"path.name"}},
		{"name too long", http.MethodPut, "/A" + strings.Repeat("b", 128), map[string]any{"value": "v"}, []string{"path.name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, c.method, base+c.path, owner.Key, c.body)
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
			for _, l := range c.locations {
				require.Contains(t, errorLocations(r), l, "body: %s", r.Raw)
			}
		})
	}
	// A value of exactly 64 KiB fits, even with JSON escaping around it.
	h.ok(t, http.StatusOK, http.MethodPut, base+"/BIG", owner.Key, map[string]any{"value": strings.Repeat("\"", 64<<10)})
	require.Empty(t, h.ok(t, http.StatusOK, http.MethodGet, base+"?limit=200", owner.Key, nil).list("secrets")[1:], "only BIG was stored")
}

func TestSecretsWithoutVault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(d *api.Deps) { d.Secrets = nil })
	tn, owner := h.tenantWithOwner(t)
	r := h.do(t, http.MethodGet, "/v1/tenants/"+tn.Slug+"/secrets", owner.Key, nil)
	requireProblem(t, r, http.StatusServiceUnavailable, "secrets_unavailable")
	r = h.do(t, http.MethodPut, "/v1/tenants/"+tn.Slug+"/secrets/X", owner.Key, map[string]any{"value": "v"})
	requireProblem(t, r, http.StatusServiceUnavailable, "secrets_unavailable")
}

// jsonKeys lists an object's members but Huma's $schema link.
func jsonKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k == "$schema" {
			continue
		}
		out = append(out, k)
	}
	return out
}
