package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

func TestCapabilityPolicyAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug + "/policies/capabilities"

	empty := h.ok(t, http.StatusOK, "GET", base, owner.Key, nil)
	require.Empty(t, empty.list("rules"))

	rules := []map[string]any{
		{"effect": "allow", "role": "developer", "target": "group:sandbox"},
		{"effect": "deny", "role": "viewer", "target": "tool:bash"},
		{"effect": "deny", "role": "*", "target": "model:gpt*"},
	}
	put := h.ok(t, http.StatusOK, "PUT", base, owner.Key, map[string]any{"rules": rules})
	require.Len(t, put.list("rules"), 3)
	got := h.ok(t, http.StatusOK, "GET", base, owner.Key, nil).list("rules")
	require.Equal(t, "deny", got[1]["effect"])
	require.Equal(t, "tool:bash", got[1]["target"])

	bad := h.do(t, "PUT", base, owner.Key, map[string]any{"rules": []map[string]any{
		{"effect": "maybe", "role": "developer", "target": "tool:bash"},
		{"effect": "deny", "role": "root", "target": "nonsense"},
	}})
	requireProblem(t, bad, http.StatusUnprocessableEntity, "validation_failed")
	require.GreaterOrEqual(t, len(errorLocations(bad)), 3, "every invalid field is listed")

	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	h.ok(t, http.StatusOK, "GET", base, dev.Key, nil)
	requireProblem(t, h.do(t, "PUT", base, dev.Key, map[string]any{"rules": []any{}}), http.StatusForbidden, "forbidden")

	events := h.ok(t, http.StatusOK, "GET", "/v1/tenants/"+tn.Slug+"/audit-events?action=policy.capabilities.replace", owner.Key, nil).list("events")
	require.Len(t, events, 1)

	// Replacing with an empty set clears the tenant's rules.
	h.ok(t, http.StatusOK, "PUT", base, owner.Key, map[string]any{"rules": []any{}})
	require.Empty(t, h.ok(t, http.StatusOK, "GET", base, owner.Key, nil).list("rules"))
}
