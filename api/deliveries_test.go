package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// hookReceiver answers 500 to its first fails requests, then 200, and
// keeps the delivery ids and bodies it saw.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	fails  int
	ids    []string
	bodies []string
}

func newHookReceiver(t *testing.T, fails int) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{fails: fails}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.ids, rc.bodies = append(rc.ids, r.Header.Get(agent.HeaderWebhookDelivery)), append(rc.bodies, string(b))
		if len(rc.ids) <= rc.fails {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// deliverAll works every attempt of the tenant's pending deliveries through
// a delivering service whose vault can create the signing secret, until
// each is delivered or out of attempts.
func (h *harness) deliverAll(t *testing.T, tenantID string) {
	t.Helper()
	ctx := t.Context()
	svc, err := agent.NewService(h.pool, agent.Config{}, testVault(t, h.pool), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, svc.UseDelivery(agent.DeliveryConfig{AllowPrivate: true, MaxAttempts: 5, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}))
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, river.Worker[agent.DeliverArgs](&agent.DeliverWorker{Service: svc}))
	client, err := river.NewClient(riverpgxv5.New(h.pool), &river.Config{})
	require.NoError(t, err)
	rows, err := h.pool.Query(ctx, `SELECT id FROM river_job WHERE kind = 'agent.deliver' AND args->>'tenant_id' = $1`, tenantID)
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	for _, id := range ids {
		job, err := client.JobGet(ctx, id)
		require.NoError(t, err)
		tx, err := h.pool.Begin(ctx)
		require.NoError(t, err)
		for job.FinalizedAt == nil {
			res, _ := w.WorkJob(ctx, t, tx, job)
			require.NotNil(t, res)
			job = res.Job
		}
		require.NoError(t, tx.Rollback(context.WithoutCancel(ctx)))
	}
}

func TestRunWebhookDeliveriesOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	rc := newHookReceiver(t, 2)
	hook := rc.URL + "/hooks/agentplane"
	r := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key,
		map[string]any{"input": "hello", "webhook_url": hook})
	runID := r.str("id")
	require.Equal(t, hook, r.str("webhook_url"))
	path := s.base + "/runs/" + runID + "/deliveries"
	require.Empty(t, h.ok(t, http.StatusOK, "GET", path, s.dev.Key, nil).list("deliveries"), "nothing before the run ends")

	h.execute(t, s.tn.ID, runID)
	ds := h.ok(t, http.StatusOK, "GET", path, s.dev.Key, nil).list("deliveries")
	require.Len(t, ds, 1)
	require.Equal(t, "pending", ds[0]["status"])
	require.Equal(t, hook, ds[0]["url"])
	require.Equal(t, runID, ds[0]["run_id"])
	require.Empty(t, ds[0]["attempts"])

	h.deliverAll(t, s.tn.ID)
	viewer := h.createKey(t, s.tn.Slug, s.dev.Key, policy.RoleViewer)
	got := h.ok(t, http.StatusOK, "GET", path, viewer.Key, nil)
	ds = got.list("deliveries")
	require.Len(t, ds, 1, string(got.Raw))
	d := ds[0]
	require.Equal(t, "delivered", d["status"], string(got.Raw))
	require.EqualValues(t, 200, d["last_status_code"])
	require.NotEmpty(t, d["delivered_at"])
	attempts := d["attempts"].([]any)
	require.Len(t, attempts, 3)
	for i, a := range attempts {
		a := a.(map[string]any)
		require.EqualValues(t, i+1, a["attempt"])
		require.EqualValues(t, []int{500, 500, 200}[i], a["status_code"])
	}
	require.Contains(t, attempts[0].(map[string]any)["error"], "500")
	require.Equal(t, []string{d["id"].(string), d["id"].(string), d["id"].(string)}, rc.ids)
	require.Contains(t, rc.bodies[0], `"event":"run.completed"`)
	require.Contains(t, rc.bodies[0], `"id":"`+runID+`"`)

	// Another tenant cannot see them; an unknown run is a 404.
	other := h.runSetup(t)
	requireProblem(t, h.do(t, "GET", other.base+"/runs/"+runID+"/deliveries", other.dev.Key, nil), http.StatusNotFound, "run_not_found")
	requireProblem(t, h.do(t, "GET", s.base+"/runs/"+uuid.NewString()+"/deliveries", s.dev.Key, nil), http.StatusNotFound, "run_not_found")
}

func TestRunWithoutWebhookHasNoDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	r := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key, map[string]any{"input": "hello"})
	require.NotContains(t, r.JSON, "webhook_url")
	h.execute(t, s.tn.ID, r.str("id"))
	require.Empty(t, h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+r.str("id")+"/deliveries", s.dev.Key, nil).list("deliveries"))
}

func TestRunRejectsInvalidWebhookURL(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	for _, u := range []string{
		"http://example.com/hook", "ftp://example.com/x", "https://user:pw@example.com/x", "example.com/hook",
		"https://example.com/" + strings.Repeat("a", 2100),
	} {
		r := h.do(t, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key, map[string]any{"input": "x", "webhook_url": u})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
		require.Contains(t, errorLocations(r), "body.webhook_url", u)
	}
	runs := h.ok(t, http.StatusOK, "GET", s.base+"/runs", s.dev.Key, nil).list("runs")
	require.Empty(t, runs, "no run was created")
}

func TestAgentWebhookURL(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	tn, owner := s.tn, h.createKey(t, s.tn.Slug, h.admin, policy.RoleOwner)
	agents := "/v1/tenants/" + tn.Slug + "/agents"
	hook := "https://hooks.example.com/agentplane?token=abc"

	a := h.ok(t, http.StatusCreated, "POST", agents, owner.Key, map[string]any{"name": "hooked", "webhook_url": hook})
	require.Equal(t, hook, a.str("webhook_url"))
	r := h.do(t, "POST", agents, owner.Key, map[string]any{"name": "bad", "webhook_url": "http://example.com/"})
	requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")

	run := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key, map[string]any{"input": "x", "agent": "hooked"})
	require.Equal(t, hook, run.str("webhook_url"), "the agent's webhook is the default")

	p := h.ok(t, http.StatusOK, "PATCH", agents+"/hooked", owner.Key, map[string]any{"webhook_url": nil})
	require.Nil(t, p.JSON["webhook_url"])
	require.Contains(t, p.JSON, "webhook_url")
	d := h.ok(t, http.StatusOK, "GET", agents+"/default", owner.Key, nil)
	require.Nil(t, d.JSON["webhook_url"])
}
