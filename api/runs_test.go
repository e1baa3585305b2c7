package api_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/policy"
)

// runSetup is a tenant with the scripted model, a developer key and a thread.
type runSetup struct {
	tn     tenant
	dev    key
	thread string
	base   string
}

func (h *harness) runSetup(t *testing.T) runSetup {
	t.Helper()
	tn, owner := h.tenantWithOwner(t)
	h.useScriptedModel(t, tn.Slug, owner.Key)
	dev := h.createKey(t, tn.Slug, owner.Key, policy.RoleDeveloper)
	base := "/v1/tenants/" + tn.Slug
	th := h.ok(t, http.StatusCreated, "POST", base+"/threads", dev.Key, map[string]any{"title": "t"})
	return runSetup{tn: tn, dev: dev, thread: th.str("id"), base: base}
}

func (h *harness) execute(t *testing.T, tenantID, runID string) {
	t.Helper()
	require.NoError(t, h.agents.Execute(t.Context(), agent.RunArgs{TenantID: uuid.MustParse(tenantID), RunID: uuid.MustParse(runID)}))
}

func TestRunLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	r := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key,
		map[string]any{"input": "hello agent", "metadata": map[string]any{"ticket": "T-1"}, "secrets": map[string]any{"TOKEN_X": "s3cr3t-value-xyz"}})
	runID := r.str("id")
	require.Equal(t, "queued", r.str("status"))
	require.NotContains(t, string(r.Raw), "s3cr3t-value-xyz")

	h.execute(t, s.tn.ID, runID)
	got := h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+runID, s.dev.Key, nil)
	require.Equal(t, "succeeded", got.str("status"), string(got.Raw))
	require.Equal(t, "end_turn", got.str("stop_reason"))
	usage := got.JSON["usage"].(map[string]any)
	require.Greater(t, usage["total_tokens"].(float64), 0.0)
	require.Equal(t, "T-1", got.JSON["metadata"].(map[string]any)["ticket"])

	msgs := h.ok(t, http.StatusOK, "GET", s.base+"/threads/"+s.thread+"/messages", s.dev.Key, nil).list("messages")
	require.Len(t, msgs, 2)
	require.Equal(t, "hello agent", msgs[0]["content"])
	require.Equal(t, "assistant", msgs[1]["role"])

	evs := h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+runID+"/events", s.dev.Key, nil).list("events")
	require.Equal(t, "run.queued", evs[0]["type"])
	require.Equal(t, "run.completed", evs[len(evs)-1]["type"])
	after := h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+runID+"/events?after=2", s.dev.Key, nil).list("events")
	require.Len(t, after, len(evs)-2)
	require.EqualValues(t, 3, after[0]["seq"])

	th := h.ok(t, http.StatusOK, "GET", s.base+"/threads/"+s.thread, s.dev.Key, nil)
	require.Equal(t, usage["total_tokens"], th.JSON["usage"].(map[string]any)["total_tokens"], "thread totals sum the ledger")
	require.EqualValues(t, 1, th.JSON["usage"].(map[string]any)["calls"])

	listed := h.ok(t, http.StatusOK, "GET", s.base+"/runs?status=succeeded&thread_id="+s.thread, s.dev.Key, nil).list("runs")
	require.Len(t, listed, 1)

	var secretRows int
	require.NoError(t, h.pool.QueryRow(t.Context(), `SELECT count(*) FROM river_job WHERE args::text LIKE '%s3cr3t-value-xyz%'`).Scan(&secretRows))
	require.Zero(t, secretRows, "request secrets must never reach the job queue")
}

// sseFrames reads SSE frames until run.completed or the deadline.
func sseFrames(t *testing.T, h *harness, path, token, lastID string) []map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", h.srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var (
		frames []map[string]string
		cur    = map[string]string{}
	)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(cur) > 0 {
				frames = append(frames, cur)
				if cur["event"] == "run.completed" {
					return frames
				}
			}
			cur = map[string]string{}
			continue
		}
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, ":") {
			cur[k] = v
		}
	}
	return frames
}

func TestRunEventsStreamLiveAndResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	h.model.Enqueue(llmtest.Reply{Content: "streaming reply in several pieces", Delay: 300 * time.Millisecond})
	runID := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key, map[string]any{"input": "go"}).str("id")

	done := make(chan []map[string]string)
	go func() { done <- sseFrames(t, h, s.base+"/runs/"+runID+"/events", s.dev.Key, "") }()
	h.execute(t, s.tn.ID, runID)
	var frames []map[string]string
	select {
	case frames = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("stream did not end")
	}
	require.Equal(t, "run.queued", frames[0]["event"])
	require.Equal(t, "run.completed", frames[len(frames)-1]["event"])
	for i, f := range frames {
		require.Equal(t, strconv.Itoa(i+1), f["id"], "ids are the gap-free sequence")
	}

	resumed := sseFrames(t, h, s.base+"/runs/"+runID+"/events", s.dev.Key, "3")
	require.Len(t, resumed, len(frames)-3)
	require.Equal(t, "4", resumed[0]["id"])
}

func TestRunCreateValidationAndIdempotency(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	path := s.base + "/threads/" + s.thread + "/runs"

	hdr := http.Header{"Idempotency-Key": {"abc-123"}}
	first := h.doH(t, "POST", path, s.dev.Key, map[string]any{"input": "once"}, hdr)
	require.Equal(t, http.StatusAccepted, first.Status, string(first.Raw))
	again := h.doH(t, "POST", path, s.dev.Key, map[string]any{"input": "once"}, hdr)
	require.Equal(t, http.StatusAccepted, again.Status)
	require.Equal(t, first.str("id"), again.str("id"))
	requireProblem(t, h.doH(t, "POST", path, s.dev.Key, map[string]any{"input": "other"}, hdr), http.StatusConflict, "idempotency_key_reused")

	requireProblem(t, h.do(t, "POST", path, s.dev.Key, map[string]any{"input": "   "}), http.StatusUnprocessableEntity, "validation_failed")
	requireProblem(t, h.do(t, "POST", path, s.dev.Key, map[string]any{"input": strings.Repeat("x", 300<<10)}), http.StatusRequestEntityTooLarge, "input_too_large")
	requireProblem(t, h.do(t, "POST", path, s.dev.Key, map[string]any{"input": "x", "agent": "nope"}), http.StatusNotFound, "agent_not_found")
	requireProblem(t, h.do(t, "POST", s.base+"/threads/"+uuid.NewString()+"/runs", s.dev.Key, map[string]any{"input": "x"}), http.StatusNotFound, "thread_not_found")
	requireProblem(t, h.do(t, "POST", path, s.dev.Key, map[string]any{"input": "x", "bogus": 1}), http.StatusUnprocessableEntity, "validation_failed")

	viewer := h.createKey(t, s.tn.Slug, s.dev.Key, policy.RoleViewer)
	requireProblem(t, h.do(t, "POST", path, viewer.Key, map[string]any{"input": "x"}), http.StatusForbidden, "forbidden")
}

func TestRunCancelBeforeStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	runID := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key, map[string]any{"input": "never"}).str("id")
	c := h.ok(t, http.StatusOK, "POST", s.base+"/runs/"+runID+"/cancel", s.dev.Key, nil)
	require.Equal(t, "cancelled", c.str("status"))
	require.Equal(t, "cancelled", c.str("stop_reason"))
	h.ok(t, http.StatusOK, "POST", s.base+"/runs/"+runID+"/cancel", s.dev.Key, nil)
	before := len(h.model.Requests())
	h.execute(t, s.tn.ID, runID)
	require.Len(t, h.model.Requests(), before, "a cancelled run never calls the model")
	evs := h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+runID+"/events", s.dev.Key, nil).list("events")
	for _, e := range evs {
		require.NotEqual(t, "run.started", e["type"])
	}
}
