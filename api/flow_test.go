package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// pageAll walks a list with the given page size and returns every id,
// failing on a repeated id.
func (h *harness) pageAll(t *testing.T, path, field, token string, limit int) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100, "pagination does not end")
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := h.ok(t, http.StatusOK, http.MethodGet, path+sep+"limit="+strconv.Itoa(limit)+"&cursor="+cursor, token, nil)
		items := r.list(field)
		require.LessOrEqual(t, len(items), limit)
		for _, it := range items {
			id := it["id"].(string)
			require.False(t, seen[id], "id %s on two pages", id)
			seen[id] = true
			ids = append(ids, id)
		}
		if cursor = r.str("next_cursor"); cursor == "" {
			return ids
		}
		require.Len(t, items, limit, "a short page must be the last")
	}
}

func TestTenantLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	slug := randomSlug()

	r := h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants", h.admin, map[string]any{"slug": slug, "name": "Acme"})
	for _, f := range []string{"id", "slug", "name", "status", "created_at"} {
		require.NotEmpty(t, r.JSON[f], "tenant field %s", f)
	}
	require.Equal(t, "active", r.str("status"))
	base := "/v1/tenants/" + slug

	// An owner member with a console password; the password never comes back.
	password := "pw-" + randomHex(8)
	email := randomEmail()
	r = h.ok(t, http.StatusCreated, http.MethodPost, base+"/members", h.admin, map[string]any{"email": email, "role": "owner", "password": password})
	require.Equal(t, email, r.str("email"))
	require.Equal(t, "owner", r.str("role"))
	require.NotEmpty(t, r.str("id"))
	require.NotContains(t, string(r.Raw), password)
	require.NotContains(t, r.JSON, "password")

	// Keys: the secret is in the create response only.
	r = h.ok(t, http.StatusCreated, http.MethodPost, base+"/api-keys", h.admin, map[string]any{"name": "root", "role": "owner"})
	for _, f := range []string{"id", "name", "role", "prefix", "key", "created_at"} {
		require.NotEmpty(t, r.JSON[f], "key field %s", f)
	}
	owner := key{ID: r.str("id"), Key: r.str("key")}
	require.True(t, strings.HasPrefix(owner.Key, "ap_"+r.str("prefix")+"_"), "key %q", owner.Key)
	created := []key{owner}
	for _, role := range []policy.Role{policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer} {
		created = append(created, h.createKey(t, slug, owner.Key, role))
	}

	ids := h.pageAll(t, base+"/api-keys", "api_keys", owner.Key, 2)
	require.Len(t, ids, len(created))
	for i, k := range created {
		require.Equal(t, k.ID, ids[i], "keys listed in creation order")
	}
	list := h.ok(t, http.StatusOK, http.MethodGet, base+"/api-keys", owner.Key, nil)
	for _, k := range list.list("api_keys") {
		require.NotContains(t, k, "key")
	}
	for _, k := range created {
		require.NotContains(t, string(list.Raw), strings.Split(k.Key, "_")[2], "secret in a list response")
	}
	// The owner key has been used, so last_used_at is set; an unused key has none.
	for _, k := range list.list("api_keys") {
		switch k["id"] {
		case owner.ID:
			require.NotEmpty(t, k["last_used_at"])
		case created[4].ID:
			require.Nil(t, k["last_used_at"])
		}
	}

	// Members page the same way.
	memberIDs := []string{h.ok(t, http.StatusOK, http.MethodGet, base+"/members", owner.Key, nil).list("members")[0]["id"].(string)}
	for range 4 {
		memberIDs = append(memberIDs, h.addMember(t, slug, owner.Key, randomEmail(), policy.RoleViewer, ""))
	}
	require.Equal(t, memberIDs, h.pageAll(t, base+"/members", "members", owner.Key, 2))

	// An API key sees exactly its own tenant.
	tenantsSeen := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants", owner.Key, nil).list("tenants")
	require.Len(t, tenantsSeen, 1)
	require.Equal(t, slug, tenantsSeen[0]["slug"])

	r = h.ok(t, http.StatusOK, http.MethodPatch, base, owner.Key, map[string]any{"name": "Acme Renamed"})
	require.Equal(t, "Acme Renamed", r.str("name"))
	require.Equal(t, "Acme Renamed", h.ok(t, http.StatusOK, http.MethodGet, base, created[4].Key, nil).str("name"))

	h.ok(t, http.StatusNoContent, http.MethodDelete, base, owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, base, h.admin, nil), http.StatusNotFound, "tenant_not_found")
	requireProblem(t, h.do(t, http.MethodDelete, base, h.admin, nil), http.StatusNotFound, "tenant_not_found")
	// Its keys die with it.
	requireProblem(t, h.do(t, http.MethodGet, "/v1/tenants", owner.Key, nil), http.StatusUnauthorized, "invalid_api_key")
	for _, id := range h.pageAll(t, "/v1/tenants", "tenants", h.admin, 200) {
		require.NotEqual(t, id, r.str("id"), "deleted tenant still listed")
	}
}

func TestAdminListsTenantsPageByPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mine []string
	for range 5 {
		mine = append(mine, h.createTenant(t).ID)
	}
	all := h.pageAll(t, "/v1/tenants", "tenants", h.admin, 2)
	for _, id := range mine {
		require.Contains(t, all, id)
	}
}
