package api_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProblemCarriesRequestID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	r := h.do(t, http.MethodGet, "/v1/tenants", "", nil)
	requireProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	require.Equal(t, "/v1/tenants", r.str("instance"))

	// A harmless client-supplied id is kept; a hostile one is replaced.
	r = h.doH(t, http.MethodGet, "/v1/tenants", "", nil, http.Header{"X-Request-Id": {"client-req.42"}})
	requireProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	require.Equal(t, "client-req.42", r.str("request_id"))
	r = h.doH(t, http.MethodGet, "/v1/tenants", "", nil, http.Header{"X-Request-Id": {"bad id\twith<html>"}})
	requireProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	require.NotContains(t, r.str("request_id"), "html")

	// Successful responses carry the header too.
	ok := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants?limit=1", h.admin, nil)
	require.NotEmpty(t, ok.Header.Get("X-Request-Id"))
}

func TestValidationProblems(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	big := strings.Repeat("a", 70<<10)

	cases := []struct {
		name         string
		method, path string
		body         any
		status       int
		code         string
		locations    []string // each must appear in errors[].location
	}{
		{"unknown field", http.MethodPost, base + "/api-keys",
			map[string]any{"name": "ci", "role": "viewer", "bogus": 1}, 422, "validation_failed", []string{"body.bogus"}},
		{"every invalid field", http.MethodPost, base + "/members",
			map[string]any{"email": "not-an-email", "role": "king", "password": "short"}, 422, "validation_failed",
			[]string{"body.email", "body.role", "body.password"}},
		{"expiry in the past", http.MethodPost, base + "/api-keys",
			map[string]any{"name": "ci", "role": "viewer", "expires_at": time.Now().Add(-time.Hour)}, 422, "validation_failed",
			[]string{"body.expires_at"}},
		{"oversize body", http.MethodPost, base + "/api-keys",
			map[string]any{"name": big, "role": "viewer"}, 413, "body_too_large", nil},
		{"malformed slug", http.MethodGet, "/v1/tenants/Not_A_Slug", nil, 422, "validation_failed", []string{"path.tenant"}},
		{"slug too short", http.MethodGet, "/v1/tenants/ab/members", nil, 422, "validation_failed", []string{"path.tenant"}},
		{"malformed member id (patch)", http.MethodPatch, base + "/members/not-a-uuid",
			map[string]any{"role": "viewer"}, 422, "validation_failed", []string{"path.member"}},
		{"malformed member id (delete)", http.MethodDelete, base + "/members/12345", nil, 422, "validation_failed", []string{"path.member"}},
		{"malformed key id", http.MethodDelete, base + "/api-keys/not-a-uuid", nil, 422, "validation_failed", []string{"path.key"}},
		{"limit too small", http.MethodGet, base + "/members?limit=0", nil, 422, "validation_failed", []string{"query.limit"}},
		{"limit too large", http.MethodGet, base + "/api-keys?limit=201", nil, 422, "validation_failed", []string{"query.limit"}},
		{"bad tenant slug in body", http.MethodPost, "/v1/tenants",
			map[string]any{"slug": "Bad Slug", "name": ""}, 422, "validation_failed", []string{"body.slug", "body.name"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			token := owner.Key
			if c.path == "/v1/tenants" {
				token = h.admin
			}
			r := h.do(t, c.method, c.path, token, c.body)
			requireProblem(t, r, c.status, c.code)
			locs := errorLocations(r)
			for _, l := range c.locations {
				require.Contains(t, locs, l, "body: %s", r.Raw)
			}
		})
	}
}

// Huma reports a missing property at "body", naming it in the message.
func TestMissingRequiredFieldsAreAllListed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	r := h.do(t, http.MethodPost, "/v1/tenants/"+tn.Slug+"/api-keys", owner.Key, map[string]any{})
	requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
	var msgs []string
	for _, e := range r.list("errors") {
		msgs = append(msgs, e["message"].(string))
	}
	require.Len(t, msgs, 2, "body: %s", r.Raw)
	require.Contains(t, strings.Join(msgs, "\n"), "property name")
	require.Contains(t, strings.Join(msgs, "\n"), "property role")
}

func TestMalformedJSONIsAProblem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	r := h.do(t, http.MethodPost, "/v1/tenants/"+tn.Slug+"/api-keys", owner.Key, `{"name": "ci", "role":`)
	require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, r.Status, "body: %s", r.Raw)
	requireProblem(t, r, r.Status, r.str("code"))
	require.NotEmpty(t, r.str("code"))
}

func TestBadCursor(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	wrongLength := base64.RawURLEncoding.EncodeToString([]byte("short"))

	for _, path := range []string{"/v1/tenants", base + "/members", base + "/api-keys", base + "/audit-events"} {
		for _, cursor := range []string{"!!not-base64!!", wrongLength} {
			t.Run(path+"/"+cursor, func(t *testing.T) {
				token := owner.Key
				if path == "/v1/tenants" {
					token = h.admin
				}
				r := h.do(t, http.MethodGet, path+"?cursor="+cursor, token, nil)
				requireProblem(t, r, http.StatusUnprocessableEntity, "invalid_cursor")
				require.Contains(t, errorLocations(r), "query.cursor")
			})
		}
	}
}
