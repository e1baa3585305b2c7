package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// bodyOverrides replaces the schema-derived request body of an operation
// when the derived one is not a sensible valid request.
var bodyOverrides = map[string]func() any{
	"member-create": func() any { return map[string]any{"email": randomEmail(), "role": "viewer"} },
	// Multipart; files_test.go covers its bodies. Without one, a missing
	// thread still answers 404 first.
	"upload-create": func() any { return nil },
}

// requestBody returns a minimal valid JSON body for o, or nil when it takes none.
func requestBody(t *testing.T, oapi *huma.OpenAPI, o operation) any {
	t.Helper()
	if f, ok := bodyOverrides[o.Op.OperationID]; ok {
		return f()
	}
	if o.Op.RequestBody == nil {
		return nil
	}
	mt := o.Op.RequestBody.Content["application/json"]
	require.NotNil(t, mt, "%s: no application/json request body; add it to bodyOverrides", o.Op.OperationID)
	return sample(oapi.Components.Schemas, mt.Schema)
}

// sample builds a value satisfying s, filling only required properties.
func sample(reg huma.Registry, s *huma.Schema) any {
	if s.Ref != "" {
		s = reg.SchemaFromRef(s.Ref)
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch s.Type {
	case "object":
		m := map[string]any{}
		for _, name := range s.Required {
			m[name] = sample(reg, s.Properties[name])
		}
		return m
	case "array":
		return []any{}
	case "boolean":
		return false
	case "integer", "number":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1
	}
	switch s.Format {
	case "email":
		return randomEmail()
	case "uuid":
		return uuid.NewString()
	case "date-time":
		return time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	}
	if len(s.Examples) > 0 {
		return s.Examples[0]
	}
	n := 1
	if s.MinLength != nil {
		n = max(n, *s.MinLength)
	}
	return strings.Repeat("a", n)
}

var pathParamRE = regexp.MustCompile(`\{([a-z_]+)\}`)

// paramSamples are valid values of path parameters that are names, not ids.
var paramSamples = map[string]string{"name": "sample"}

// fill substitutes {tenant} with slug and every other parameter with ids[name],
// or a random UUID when ids has none.
func fill(path, slug string, ids map[string]string) string {
	return pathParamRE.ReplaceAllStringFunc(path, func(p string) string {
		name := p[1 : len(p)-1]
		if name == "tenant" {
			return slug
		}
		if id, ok := ids[name]; ok {
			return id
		}
		if v, ok := paramSamples[name]; ok {
			return v
		}
		return uuid.NewString()
	})
}

// Tenant A's owner gets, on every tenant-scoped operation, the same 404
// tenant_not_found for tenant B (active, suspended or deleted) as for a slug
// that never existed: no hint that B exists, and B is left untouched.
func TestCrossTenantIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a, aKey := h.tenantWithOwner(t)
	b, bKey := h.tenantWithOwner(t)
	bMember := h.addMember(t, b.Slug, bKey.Key, randomEmail(), policy.RoleOwner, "")
	suspended, _ := h.tenantWithOwner(t)
	h.ok(t, http.StatusOK, http.MethodPatch, "/v1/tenants/"+suspended.Slug, h.admin, map[string]any{"status": "suspended"})
	deleted := h.createTenant(t)
	h.ok(t, http.StatusNoContent, http.MethodDelete, "/v1/tenants/"+deleted.Slug, h.admin, nil)
	auditPath := "/v1/tenants/" + b.Slug + "/audit-events?limit=200"
	bAudit := len(h.ok(t, http.StatusOK, http.MethodGet, auditPath, h.admin, nil).list("events"))

	oapi := h.server.API().OpenAPI()
	var scoped []operation
	for _, o := range operations(oapi) {
		if strings.Contains(o.Path, "{tenant}") {
			scoped = append(scoped, o)
		}
	}
	require.NotEmpty(t, scoped)
	realIDs := map[string]string{"member": bMember, "key": bKey.ID}
	others := []string{randomSlug(), suspended.Slug, deleted.Slug}

	for _, o := range scoped {
		t.Run(o.Op.OperationID, func(t *testing.T) {
			for _, ids := range []map[string]string{nil, realIDs} {
				body := requestBody(t, oapi, o)
				ref := h.do(t, o.Method, fill(o.Path, b.Slug, ids), aKey.Key, body)
				requireProblem(t, ref, http.StatusNotFound, "tenant_not_found")
				want := strings.ReplaceAll(ref.str("detail"), b.Slug, "SLUG")
				for _, slug := range others {
					r := h.do(t, o.Method, fill(o.Path, slug, ids), aKey.Key, body)
					requireProblem(t, r, http.StatusNotFound, "tenant_not_found")
					require.Equal(t, want, strings.ReplaceAll(r.str("detail"), slug, "SLUG"), "tenant %s", slug)
					require.Len(t, r.JSON, len(ref.JSON), "same problem members for %s: %s vs %s", slug, r.Raw, ref.Raw)
				}
			}
		})
	}

	// B is untouched: no audit event, its key and member still there.
	require.Len(t, h.ok(t, http.StatusOK, http.MethodGet, auditPath, h.admin, nil).list("events"), bAudit)
	members := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+b.Slug+"/members", bKey.Key, nil).list("members")
	require.Len(t, members, 1)
	require.Equal(t, bMember, members[0]["id"])

	// Control: the same requests are well-formed in A's own tenant (so the
	// 404s above are isolation, not a malformed probe). Delete runs last.
	tenantDelete := -1
	for i, o := range scoped {
		if o.Op.OperationID == "tenant-delete" {
			tenantDelete = i
			continue
		}
		requireWellFormed(t, h, aKey.Key, a.Slug, oapi, o)
	}
	if tenantDelete >= 0 {
		requireWellFormed(t, h, aKey.Key, a.Slug, oapi, scoped[tenantDelete])
	}
}

func requireWellFormed(t *testing.T, h *harness, token, slug string, oapi *huma.OpenAPI, o operation) {
	t.Helper()
	r := h.do(t, o.Method, fill(o.Path, slug, nil), token, requestBody(t, oapi, o))
	require.NotContains(t, []int{400, 401, 403, 405, 413, 415, 422}, r.Status, "%s in own tenant: %s", o.Op.OperationID, r.Raw)
	require.Less(t, r.Status, 500, "%s in own tenant: %s", o.Op.OperationID, r.Raw)
	require.NotEqual(t, "tenant_not_found", r.str("code"), "%s in own tenant", o.Op.OperationID)
}

// Within its own tenant, a key cannot reach another tenant's member or key
// ids: they are simply not found there.
func TestForeignResourceIDsAreNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a, aKey := h.tenantWithOwner(t)
	b, bKey := h.tenantWithOwner(t)
	bMember := h.addMember(t, b.Slug, bKey.Key, randomEmail(), policy.RoleViewer, "")

	cases := []struct {
		method, path string
		body         any
		code         string
	}{
		{http.MethodPatch, "/members/" + bMember, map[string]any{"role": "admin"}, "member_not_found"},
		{http.MethodDelete, "/members/" + bMember, nil, "member_not_found"},
		{http.MethodDelete, "/api-keys/" + bKey.ID, nil, "api_key_not_found"},
	}
	for _, c := range cases {
		r := h.do(t, c.method, "/v1/tenants/"+a.Slug+c.path, aKey.Key, c.body)
		requireProblem(t, r, http.StatusNotFound, c.code)
	}
	// B's key still works and its member kept its role.
	members := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+b.Slug+"/members", bKey.Key, nil).list("members")
	require.Len(t, members, 1)
	require.Equal(t, "viewer", members[0]["role"])
}
