package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// Secrets never reach the logs: not the admin token, not an API key or its
// secret half, not a member's password, whether requests succeed or fail.
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	h.ok(t, http.StatusOK, http.MethodGet, base+"/api-keys", dev.Key, nil)

	password := "pw-" + randomHex(12)
	email := randomEmail()
	h.addMember(t, tn.Slug, owner.Key, email, policy.RoleViewer, password)
	// Failures: a conflict and a validation error that echo the body back.
	requireProblem(t, h.do(t, http.MethodPost, base+"/members", owner.Key,
		map[string]any{"email": email, "role": "viewer", "password": password}), http.StatusConflict, "already_member")
	requireProblem(t, h.do(t, http.MethodPost, base+"/members", owner.Key,
		map[string]any{"email": "nope", "role": "viewer", "password": password + strings.Repeat("x", 80)}), http.StatusUnprocessableEntity, "validation_failed")
	// A wrong secret for a known prefix, and a revoked key.
	wrong := dev.Key[:len(dev.Key)-4] + "zzzz"
	requireProblem(t, h.do(t, http.MethodGet, base, wrong, nil), http.StatusUnauthorized, "invalid_api_key")
	h.ok(t, http.StatusNoContent, http.MethodDelete, base+"/api-keys/"+dev.ID, owner.Key, nil)
	requireProblem(t, h.do(t, http.MethodGet, base, dev.Key, nil), http.StatusUnauthorized, "api_key_revoked")

	logs := h.logs.String()
	require.NotEmpty(t, logs, "the server logged nothing; is the logger wired?")
	require.Contains(t, logs, `"msg":"http request"`)
	for name, secret := range map[string]string{
		"admin token": h.admin, "owner key": owner.Key, "developer key": dev.Key,
		"developer secret": strings.Split(dev.Key, "_")[2], "wrong key": wrong, "password": password,
	} {
		require.NotContains(t, logs, secret, "%s in logs", name)
	}

	// Every line is JSON with a request id for requests.
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] == "http request" {
			require.NotEmpty(t, rec["request_id"], line)
		}
	}
}
