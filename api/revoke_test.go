package api_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// Once DELETE …/api-keys/{key} has answered, this server refuses the key,
// even while other requests are using it concurrently: a request that read
// the key row before the revocation committed must not leave it cached as
// valid.
func TestRevocationIsImmediateUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	path := "/v1/tenants/" + tn.Slug

	for i := range 20 {
		k := h.createKey(t, tn.Slug, owner.Key, policy.RoleViewer)
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.srv.URL+path, nil)
					if err != nil {
						return
					}
					req.Header.Set("Authorization", "Bearer "+k.Key)
					if res, err := h.srv.Client().Do(req); err == nil {
						_ = res.Body.Close()
					}
				}
			})
		}
		h.ok(t, http.StatusNoContent, http.MethodDelete, path+"/api-keys/"+k.ID, owner.Key, nil)
		r := h.do(t, http.MethodGet, path, k.Key, nil)
		stop.Store(true)
		wg.Wait()
		require.Equal(t, http.StatusUnauthorized, r.Status, "round %d: revoked key accepted after DELETE returned: %s", i, r.Raw)
		require.Equal(t, "api_key_revoked", r.str("code"))
	}
}

// Revoking a key is bounded by rank like removing a member: a developer may
// revoke developer and viewer keys but not an admin's or an owner's (the
// member rule, "admin removes an owner" → role_escalation, applied to keys).
func TestRevokeIsBoundedByRank(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug + "/api-keys/"
	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	admin := h.createKey(t, tn.Slug, owner.Key, policy.RoleAdmin)

	for _, target := range []key{owner, admin} {
		requireProblem(t, h.do(t, http.MethodDelete, base+target.ID, dev.Key, nil), http.StatusForbidden, "role_escalation")
		h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+tn.Slug, target.Key, nil)
	}
	peer := h.createKey(t, tn.Slug, dev.Key, policy.RoleDeveloper)
	h.ok(t, http.StatusNoContent, http.MethodDelete, base+peer.ID, dev.Key, nil)
	h.ok(t, http.StatusNoContent, http.MethodDelete, base+dev.ID, admin.Key, nil)
}
