package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// auditCount is the number of audit events in slug, read as the admin.
func (h *harness) auditCount(t *testing.T, slug string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		r := h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+slug+"/audit-events?limit=200&cursor="+cursor, h.admin, nil)
		n += len(r.list("events"))
		if cursor = r.str("next_cursor"); cursor == "" {
			return n
		}
	}
}

func TestLastOwnerIsKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	first := h.addMember(t, tn.Slug, owner.Key, randomEmail(), policy.RoleOwner, "")
	before := h.auditCount(t, tn.Slug)

	requireProblem(t, h.do(t, http.MethodPatch, base+"/members/"+first, owner.Key, map[string]any{"role": "admin"}),
		http.StatusConflict, "last_owner")
	requireProblem(t, h.do(t, http.MethodDelete, base+"/members/"+first, owner.Key, nil), http.StatusConflict, "last_owner")
	requireProblem(t, h.do(t, http.MethodDelete, base+"/members/"+first, h.admin, nil), http.StatusConflict, "last_owner")
	require.Equal(t, before, h.auditCount(t, tn.Slug), "a refused change left an audit event")

	// With a second owner, the first may step down, and then the second is the last.
	second := h.addMember(t, tn.Slug, owner.Key, randomEmail(), policy.RoleOwner, "")
	r := h.ok(t, http.StatusOK, http.MethodPatch, base+"/members/"+first, owner.Key, map[string]any{"role": "admin"})
	require.Equal(t, "admin", r.str("role"))
	requireProblem(t, h.do(t, http.MethodDelete, base+"/members/"+second, owner.Key, nil), http.StatusConflict, "last_owner")
	h.ok(t, http.StatusNoContent, http.MethodDelete, base+"/members/"+first, owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodDelete, base+"/members/"+first, owner.Key, nil), http.StatusNotFound, "member_not_found")
}

func TestAlreadyMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	other, otherOwner := h.tenantWithOwner(t)
	email := randomEmail()
	h.addMember(t, tn.Slug, owner.Key, email, policy.RoleDeveloper, "correct-horse-battery")
	before := h.auditCount(t, tn.Slug)

	// Email matching is case-insensitive.
	for _, e := range []string{email, strings.ToUpper(email)} {
		r := h.do(t, http.MethodPost, "/v1/tenants/"+tn.Slug+"/members", owner.Key, map[string]any{"email": e, "role": "viewer"})
		requireProblem(t, r, http.StatusConflict, "already_member")
	}
	require.Equal(t, before, h.auditCount(t, tn.Slug), "a refused change left an audit event")

	// The same user may join another tenant.
	h.addMember(t, other.Slug, otherOwner.Key, email, policy.RoleViewer, "")
}

func TestSlugTaken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn := h.createTenant(t)
	before := h.auditCount(t, tn.Slug)

	r := h.do(t, http.MethodPost, "/v1/tenants", h.admin, map[string]any{"slug": tn.Slug, "name": "Again"})
	requireProblem(t, r, http.StatusConflict, "slug_taken")
	require.Equal(t, before, h.auditCount(t, tn.Slug))

	// A deleted tenant's slug is free again, and names a new tenant.
	h.ok(t, http.StatusNoContent, http.MethodDelete, "/v1/tenants/"+tn.Slug, h.admin, nil)
	r = h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants", h.admin, map[string]any{"slug": tn.Slug, "name": "Reborn"})
	require.NotEqual(t, tn.ID, r.str("id"))
	require.Equal(t, "Reborn", h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+tn.Slug, h.admin, nil).str("name"))
}

// Concurrent attempts to demote the two owners of a tenant leave one owner.
func TestLastOwnerUnderConcurrency(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	ids := []string{
		h.addMember(t, tn.Slug, owner.Key, randomEmail(), policy.RoleOwner, ""),
		h.addMember(t, tn.Slug, owner.Key, randomEmail(), policy.RoleOwner, ""),
	}
	statuses := make(chan int, len(ids))
	for _, id := range ids {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPatch, h.srv.URL+base+"/members/"+id, strings.NewReader(`{"role":"viewer"}`))
			req.Header.Set("Authorization", "Bearer "+owner.Key)
			req.Header.Set("Content-Type", "application/json")
			res, err := h.srv.Client().Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			_ = res.Body.Close()
			statuses <- res.StatusCode
		}()
	}
	got := []int{<-statuses, <-statuses}
	require.ElementsMatch(t, []int{http.StatusOK, http.StatusConflict}, got)

	owners := 0
	for _, m := range h.ok(t, http.StatusOK, http.MethodGet, base+"/members", owner.Key, nil).list("members") {
		if m["role"] == "owner" {
			owners++
		}
	}
	require.Equal(t, 1, owners)
}
