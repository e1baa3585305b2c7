package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

func TestCredentialsAreChecked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	path := "/v1/tenants/" + tn.Slug
	prefix := strings.Split(owner.Key, "_")[1]

	cases := []struct {
		name, header, code string
	}{
		{"missing", "", "unauthenticated"},
		{"not bearer", "Basic " + owner.Key, "unauthenticated"},
		{"empty bearer", "Bearer ", "unauthenticated"},
		{"malformed key", "Bearer not-a-key", "invalid_api_key"},
		{"admin token with a typo", "Bearer " + h.admin + "x", "invalid_api_key"},
		{"unknown key", "Bearer ap_" + strings.Repeat("z", 10) + "_" + strings.Repeat("0", 40), "invalid_api_key"},
		{"known prefix, wrong secret", "Bearer ap_" + prefix + "_" + strings.Repeat("0", 40), "invalid_api_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := http.Header{}
			if c.header != "" {
				hdr.Set("Authorization", c.header)
			}
			r := h.doH(t, http.MethodGet, path, "", nil, hdr)
			requireProblem(t, r, http.StatusUnauthorized, c.code)
			require.NotContains(t, string(r.Raw), owner.Key)
		})
	}
	h.ok(t, http.StatusOK, http.MethodGet, path, owner.Key, nil)
}

func TestExpiredKeyIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	path := "/v1/tenants/" + tn.Slug
	expires := time.Now().Add(2 * time.Second)
	r := h.ok(t, http.StatusCreated, http.MethodPost, path+"/api-keys", owner.Key,
		map[string]any{"name": "short-lived", "role": "viewer", "expires_at": expires})
	short := r.str("key")
	require.NotEmpty(t, r.str("expires_at"))

	h.ok(t, http.StatusOK, http.MethodGet, path, short, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = h.do(t, http.MethodGet, path, short, nil)
		if r.Status != http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	requireProblem(t, r, http.StatusUnauthorized, "api_key_expired")
	require.False(t, time.Now().Before(expires), "refused before its expiry")
}

func TestRevokedKeyIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	path := "/v1/tenants/" + tn.Slug

	h.ok(t, http.StatusOK, http.MethodGet, path, dev.Key, nil) // now cached
	h.ok(t, http.StatusNoContent, http.MethodDelete, path+"/api-keys/"+dev.ID, owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, path, dev.Key, nil), http.StatusUnauthorized, "api_key_revoked")

	// Revoking again is not an error; the list shows revoked_at.
	h.ok(t, http.StatusNoContent, http.MethodDelete, path+"/api-keys/"+dev.ID, owner.Key, nil)
	var found bool
	for _, k := range h.ok(t, http.StatusOK, http.MethodGet, path+"/api-keys", owner.Key, nil).list("api_keys") {
		if k["id"] == dev.ID {
			found = true
			require.NotEmpty(t, k["revoked_at"])
		}
	}
	require.True(t, found)
	// A key may revoke itself, and is refused right after.
	h.ok(t, http.StatusNoContent, http.MethodDelete, path+"/api-keys/"+owner.ID, owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, path, owner.Key, nil), http.StatusUnauthorized, "api_key_revoked")
}

func TestSuspendedTenant(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	viewer := h.createKey(t, tn.Slug, owner.Key, policy.RoleViewer)
	path := "/v1/tenants/" + tn.Slug
	h.ok(t, http.StatusOK, http.MethodGet, path, viewer.Key, nil) // cached before suspension

	// Only the platform admin changes a tenant's status.
	r := h.do(t, http.MethodPatch, path, owner.Key, map[string]any{"status": "suspended"})
	requireProblem(t, r, http.StatusForbidden, "platform_admin_required")

	r = h.ok(t, http.StatusOK, http.MethodPatch, path, h.admin, map[string]any{"status": "suspended"})
	require.Equal(t, "suspended", r.str("status"))
	for _, k := range []key{owner, viewer} {
		requireProblem(t, h.do(t, http.MethodGet, path, k.Key, nil), http.StatusForbidden, "tenant_suspended")
		requireProblem(t, h.do(t, http.MethodGet, "/v1/tenants", k.Key, nil), http.StatusForbidden, "tenant_suspended")
	}
	// The admin still sees it.
	require.Equal(t, "suspended", h.ok(t, http.StatusOK, http.MethodGet, path, h.admin, nil).str("status"))

	h.ok(t, http.StatusOK, http.MethodPatch, path, h.admin, map[string]any{"status": "active"})
	for _, k := range []key{owner, viewer} {
		require.Equal(t, "active", h.ok(t, http.StatusOK, http.MethodGet, path, k.Key, nil).str("status"))
	}
}

// TestRolePermissions checks the built-in grants end to end: each role
// against each operation, allowed (2xx) or refused with 403 forbidden.
func TestRolePermissions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	keys := map[policy.Role]key{}
	for _, role := range policy.Roles {
		keys[role] = h.createKey(t, tn.Slug, owner.Key, role)
	}

	cases := []struct {
		method, path string
		body         func() any
		minRole      policy.Role // "" means platform admin only
	}{
		{http.MethodGet, "/v1/tenants", nil, policy.RoleViewer},
		{http.MethodPost, "/v1/tenants", func() any { return map[string]any{"slug": randomSlug(), "name": "x"} }, ""},
		{http.MethodGet, base, nil, policy.RoleViewer},
		{http.MethodGet, base + "/members", nil, policy.RoleViewer},
		{http.MethodGet, base + "/api-keys", nil, policy.RoleDeveloper},
		{http.MethodPost, base + "/api-keys", func() any { return map[string]any{"name": "x", "role": "viewer"} }, policy.RoleDeveloper},
		{http.MethodGet, base + "/audit-events", nil, policy.RoleAdmin},
		{http.MethodPatch, base, func() any { return map[string]any{"name": "Renamed"} }, policy.RoleAdmin},
		{http.MethodPost, base + "/members", func() any { return map[string]any{"email": randomEmail(), "role": "viewer"} }, policy.RoleAdmin},
		// Owners may delete, but that would end the test; only refusals here.
		{http.MethodDelete, base, nil, "owner-only"},
	}
	for _, c := range cases {
		for _, role := range policy.Roles {
			t.Run(c.method+" "+c.path+" as "+string(role), func(t *testing.T) {
				var body any
				if c.body != nil {
					body = c.body()
				}
				if c.minRole == "owner-only" && role == policy.RoleOwner {
					t.Skip("covered by the tenant flow")
				}
				r := h.do(t, c.method, c.path, keys[role].Key, body)
				if c.minRole != "" && c.minRole != "owner-only" && role.AtLeast(c.minRole) {
					require.Less(t, r.Status, 300, "body: %s", r.Raw)
					return
				}
				requireProblem(t, r, http.StatusForbidden, "forbidden")
			})
		}
	}
}

func TestNobodyGrantsAboveTheirRole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	admin := h.createKey(t, tn.Slug, owner.Key, policy.RoleAdmin)
	ownerMember := h.addMember(t, tn.Slug, owner.Key, randomEmail(), policy.RoleOwner, "")

	cases := []struct {
		name, token, method, path string
		body                      any
	}{
		{"developer issues an owner key", dev.Key, http.MethodPost, "/api-keys", map[string]any{"name": "x", "role": "owner"}},
		{"developer issues an admin key", dev.Key, http.MethodPost, "/api-keys", map[string]any{"name": "x", "role": "admin"}},
		{"admin issues an owner key", admin.Key, http.MethodPost, "/api-keys", map[string]any{"name": "x", "role": "owner"}},
		{"admin adds an owner", admin.Key, http.MethodPost, "/members", map[string]any{"email": randomEmail(), "role": "owner"}},
		{"admin demotes an owner", admin.Key, http.MethodPatch, "/members/" + ownerMember, map[string]any{"role": "viewer"}},
		{"admin removes an owner", admin.Key, http.MethodDelete, "/members/" + ownerMember, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireProblem(t, h.do(t, c.method, base+c.path, c.token, c.body), http.StatusForbidden, "role_escalation")
		})
	}
	// Issuing at one's own level is fine.
	h.createKey(t, tn.Slug, dev.Key, policy.RoleDeveloper)
	h.createKey(t, tn.Slug, admin.Key, policy.RoleAdmin)
}
