package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/tenants/audit"
)

// expectedEvent is what one successful mutating request must have recorded.
type expectedEvent struct {
	requestID, action, targetKind, targetID string
}

func TestAuditTrail(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	password := "pw-" + randomHex(10)
	email := randomEmail()
	var want []expectedEvent
	mutate := func(status int, method, path string, body any, action, targetKind, targetID string) response {
		t.Helper()
		r := h.ok(t, status, method, base+path, owner.Key, body)
		if targetID == "" {
			targetID = r.str("id")
		}
		want = append(want, expectedEvent{r.Header.Get("X-Request-Id"), action, targetKind, targetID})
		return r
	}

	member := mutate(http.StatusCreated, http.MethodPost, "/members", map[string]any{"email": email, "role": "developer", "password": password}, "member.create", "member", "").str("id")
	mutate(http.StatusOK, http.MethodPatch, "/members/"+member, map[string]any{"role": "admin"}, "member.update", "member", member)
	created := mutate(http.StatusCreated, http.MethodPost, "/api-keys", map[string]any{"name": "ci", "role": "developer"}, "api_key.create", "api_key", "")
	secret := created.str("key")
	h.ok(t, http.StatusOK, http.MethodGet, base, secret, nil)
	mutate(http.StatusNoContent, http.MethodDelete, "/api-keys/"+created.str("id"), nil, "api_key.revoke", "api_key", created.str("id"))
	mutate(http.StatusOK, http.MethodPatch, "", map[string]any{"name": "Renamed"}, "tenant.update", "tenant", tn.ID)
	failed := h.do(t, http.MethodPost, base+"/members", owner.Key, map[string]any{"email": email, "role": "viewer", "password": password})
	requireProblem(t, failed, http.StatusConflict, "already_member")
	mutate(http.StatusNoContent, http.MethodDelete, "/members/"+member, nil, "member.delete", "member", member)

	all := h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?limit=200", h.admin, nil)
	events := all.list("events")
	byRequest := map[string]map[string]any{}
	for _, e := range events {
		if id, _ := e["request_id"].(string); id != "" {
			require.NotContains(t, byRequest, id, "two events for one request")
			byRequest[id] = e
		}
	}
	for _, w := range want {
		e, ok := byRequest[w.requestID]
		require.True(t, ok, "no audit event for %s (request %s)", w.action, w.requestID)
		require.Equal(t, w.action, e["action"])
		require.Equal(t, "api_key", e["actor_kind"])
		require.Equal(t, owner.ID, e["actor_id"])
		require.Equal(t, w.targetKind, e["target_kind"])
		require.Equal(t, w.targetID, e["target_id"])
		require.NotEmpty(t, e["hash"])
	}
	require.NotContains(t, byRequest, failed.Header.Get("X-Request-Id"), "a refused request left an audit event")
	// Setup by the admin: tenant.create and the owner key's api_key.create.
	require.Len(t, events, len(want)+2)
	oldest := events[len(events)-1]
	require.Equal(t, "tenant.create", oldest["action"])
	require.Equal(t, "platform_admin", oldest["actor_kind"])

	// Diffs say what changed and never hold a secret.
	require.Contains(t, string(all.Raw), email)
	for _, s := range []string{password, secret, strings.Split(secret, "_")[2], owner.Key, h.admin} {
		require.NotContains(t, string(all.Raw), s)
	}

	report, err := audit.Verify(t.Context(), h.pool, new(uuid.MustParse(tn.ID)))
	require.NoError(t, err)
	require.True(t, report.OK(), "problems: %+v", report.Problems)
	require.EqualValues(t, len(events), report.EventsChecked)
}

func TestAuditFiltersAndPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	for range 3 {
		id := h.addMember(t, tn.Slug, owner.Key, randomEmail(), "viewer", "")
		h.ok(t, http.StatusOK, http.MethodPatch, base+"/members/"+id, owner.Key, map[string]any{"role": "developer"})
	}
	h.createKey(t, tn.Slug, owner.Key, "viewer")

	cases := []struct {
		query string
		n     int
		match func(e map[string]any) bool
	}{
		{"action=member.create", 3, func(e map[string]any) bool { return e["action"] == "member.create" }},
		{"action=member.*", 6, func(e map[string]any) bool { return strings.HasPrefix(e["action"].(string), "member.") }},
		{"target_kind=api_key", 2, func(e map[string]any) bool { return e["target_kind"] == "api_key" }},
		{"actor_id=" + owner.ID, 7, func(e map[string]any) bool { return e["actor_id"] == owner.ID }},
		{"actor_id=admin-token", 2, func(e map[string]any) bool { return e["actor_kind"] == "platform_admin" }},
		{"action=member.*&target_kind=api_key", 0, nil},
		{"action=nothing.*", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			events := h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?"+c.query, owner.Key, nil).list("events")
			require.Len(t, events, c.n)
			for _, e := range events {
				require.True(t, c.match(e), "event %v does not match %s", e, c.query)
			}
		})
	}

	// Pages of 2: newest first, every seq exactly once, no gaps.
	ids := h.pageAll(t, base+"/audit-events", "events", owner.Key, 2)
	require.Len(t, ids, 9)
	var seqs []float64
	cursor := ""
	for {
		r := h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?limit=3&cursor="+cursor, owner.Key, nil)
		for _, e := range r.list("events") {
			seqs = append(seqs, e["seq"].(float64))
		}
		if cursor = r.str("next_cursor"); cursor == "" {
			break
		}
	}
	require.Len(t, seqs, 9)
	for i, s := range seqs {
		require.EqualValues(t, 9-i, s)
	}
	// Filters combine with paging.
	require.Len(t, h.pageAll(t, base+"/audit-events?action=member.*", "events", owner.Key, 4), 6)
}

// A client's own X-Request-Id is what the audit event records, and the time
// filters bound created_at.
func TestAuditRequestIDAndTimeFilters(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	base := "/v1/tenants/" + tn.Slug
	reqID := "client-" + randomHex(8)
	r := h.doH(t, http.MethodPost, base+"/members", owner.Key, map[string]any{"email": randomEmail(), "role": "viewer"},
		http.Header{"X-Request-Id": {reqID}})
	require.Equal(t, http.StatusCreated, r.Status, "body: %s", r.Raw)
	require.Equal(t, reqID, r.Header.Get("X-Request-Id"))

	events := h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?action=member.create", owner.Key, nil).list("events")
	require.Len(t, events, 1)
	require.Equal(t, reqID, events[0]["request_id"])
	require.Equal(t, r.str("id"), events[0]["target_id"])

	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	require.Empty(t, h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?since="+future, owner.Key, nil).list("events"))
	require.Empty(t, h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?until="+past, owner.Key, nil).list("events"))
	require.Len(t, h.ok(t, http.StatusOK, http.MethodGet, base+"/audit-events?since="+past+"&until="+future, owner.Key, nil).list("events"), 3)
	requireProblem(t, h.do(t, http.MethodGet, base+"/audit-events?since=yesterday", owner.Key, nil), http.StatusUnprocessableEntity, "validation_failed")
}
