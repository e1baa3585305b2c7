package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/agenttest"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web"
)

// runsFixture is a console whose runs can execute: an agent service with an
// insert-only River client (tests call Execute themselves, as a worker
// would), a scripted model, an echo tool and a started event broker.
type runsFixture struct {
	*fixture
	agents *agent.Service
	model  *llmtest.Server
	env    *agenttest.Env
}

func newRunsFixture(t *testing.T) *runsFixture {
	t.Helper()
	return newRunsFixtureWith(t, true)
}

// newRunsFixtureWith leaves the broker out unless withBroker, so the
// console's stream polls.
func newRunsFixtureWith(t *testing.T, withBroker bool) *runsFixture {
	t.Helper()
	return newEnvFixture(t, agenttest.Options{Tools: []tools.Tool{echoTool()}, Broker: withBroker})
}

// newEnvFixture serves the console over an agenttest environment without
// a tenant (tests create theirs with runTenant), with the agent package's
// default lease and no secrets vault.
func newEnvFixture(t *testing.T, o agenttest.Options) *runsFixture {
	t.Helper()
	o.NoTenant, o.Owner, o.LeaseTTL = true, "web-test", -1
	env := agenttest.New(t, pgtest.Pool(t), o)
	return &runsFixture{
		fixture: serveConsole(t, web.Deps{Tenants: env.Tenants, Agents: env.Service, Broker: env.Broker}),
		agents:  env.Service, model: env.Model, env: env,
	}
}

// runTenant creates a tenant whose default model is the scripted one.
func (f *runsFixture) runTenant(t *testing.T, name string) tenants.Tenant {
	t.Helper()
	tn := f.tenant(t, name)
	f.env.UseModel(tn)
	return tn
}

// execute runs a run to its end, as a worker would.
func (f *runsFixture) execute(t *testing.T, tn tenants.Tenant, runID string) agent.Run {
	t.Helper()
	id := uuid.MustParse(runID)
	require.NoError(t, f.agents.Execute(t.Context(), agent.RunArgs{TenantID: tn.ID, RunID: id}))
	run, err := f.agents.GetRun(t.Context(), systemAccess(tn), id)
	require.NoError(t, err)
	return run
}

// echoScript makes the model call the echo tool, then answer.
func (f *runsFixture) echoScript() {
	f.model.Enqueue(
		llmtest.Reply{Content: "Let me echo that.", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"ping"}`}},
			Usage: &llm.Usage{InputTokens: 20, OutputTokens: 7, TotalTokens: 27}},
		llmtest.Reply{Content: "The tool said: echo: ping.", Usage: &llm.Usage{InputTokens: 40, OutputTokens: 12, TotalTokens: 52}},
	)
}

// redirected asserts an htmx redirect and returns its target.
func redirected(t *testing.T, res *http.Response) string {
	t.Helper()
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	target := res.Header.Get("HX-Redirect")
	require.NotEmpty(t, target)
	return target
}

// lastSegment is the id at the end of a console URL.
func lastSegment(path string) string { return path[strings.LastIndex(path, "/")+1:] }

func TestThreadConversationAndRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "runs")
	c, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	threads := "/console/t/" + tn.Slug + "/threads"

	res, doc := c.get(threads)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("nav-threads")).Length())
	require.Equal(t, 1, doc.Find(testID("nav-runs")).Length())
	require.True(t, doc.Find(testID("nav-threads")).HasClass("active"))
	require.Equal(t, 1, doc.Find(testID("create-thread-form")+` input[name="csrf_token"]`).Length())
	require.Zero(t, doc.Find(testID("thread-row")).Length())

	// Creating a thread opens it; without JavaScript too.
	threadPage := redirected(t, first(c.htmx(http.MethodPost, threads, url.Values{"title": {"Support"}})))
	require.True(t, strings.HasPrefix(threadPage, threads+"/"), threadPage)
	res, _ = c.send(http.MethodPost, threads, url.Values{"title": {"Second"}, "csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	_, doc = c.get(threads)
	titles := doc.Find(testID("thread-link")).Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	require.Equal(t, []string{"Second", "Support"}, titles, "newest first")
	res, doc = c.htmx(http.MethodPost, threads, url.Values{"title": {strings.Repeat("x", 201)}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_title", doc.Find(testID("form-error")).AttrOr("data-code", ""))

	res, doc = c.get(threadPage)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "Support", doc.Find(testID("thread-title-heading")).Text())
	require.Equal(t, 1, doc.Find(testID("conversation-empty")).Length())
	form := doc.Find(testID("send-message-form"))
	require.Equal(t, 1, form.Length())
	require.Equal(t, []string{"default"}, doc.Find(testID("run-agent-select")+" option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") }))
	key := form.Find(`input[name="idempotency_key"]`).AttrOr("value", "")
	require.NotEmpty(t, key)

	// Sending a message starts a run and opens its page; the same form
	// submitted twice starts it once.
	send := form.AttrOr("hx-post", "")
	msg := url.Values{"agent": {"default"}, "input": {"please echo ping"}, "idempotency_key": {key}}
	runPage := redirected(t, first(c.htmx(http.MethodPost, send, msg)))
	require.Equal(t, runPage, redirected(t, first(c.htmx(http.MethodPost, send, msg))))
	runID := lastSegment(runPage)
	run, err := f.agents.GetRun(t.Context(), systemAccess(tn), uuid.MustParse(runID))
	require.NoError(t, err)
	require.Equal(t, agent.StatusQueued, run.Status)
	require.Equal(t, "please echo ping", run.Input)

	res, doc = c.htmx(http.MethodPost, send, url.Values{"input": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_input", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	res, doc = c.htmx(http.MethodPost, send, url.Values{"agent": {"nobody"}, "input": {"kept text"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_agent", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Equal(t, "kept text", doc.Find(testID("run-input")).Text())

	// The queued run's page: pending input, the first event, the live feed.
	res, doc = c.get(runPage)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.True(t, doc.Find(testID("nav-runs")).HasClass("active"))
	require.Equal(t, "queued", doc.Find(testID("run-status")).Text())
	require.Equal(t, 1, doc.Find(testID("run-cancel")).Length())
	require.Equal(t, []string{"run.queued"}, eventTypes(doc))
	live := doc.Find(testID("run-live"))
	require.Equal(t, "sse", live.AttrOr("hx-ext", ""))
	require.Equal(t, runPage+"/events?after=1", live.AttrOr("sse-connect", ""))
	require.Equal(t, "run.completed", live.AttrOr("sse-close", ""))
	require.True(t, strings.Contains(doc.Find("script[src*='htmx-ext-sse.js']").AttrOr("src", ""), "?v="), "the SSE extension is loaded, versioned")
	require.Equal(t, "please echo ping", doc.Find(testID("message")+`[data-role="user"] `+testID("message-text")).Text())

	f.echoScript()
	run = f.execute(t, tn, runID)
	require.Equal(t, agent.StatusSucceeded, run.Status, run.Error)

	// After execution: the summary, the conversation, every event, usage.
	res, doc = c.get(runPage)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "succeeded", doc.Find(testID("run-status")).Text())
	require.Equal(t, "end_turn", doc.Find(testID("run-stop-reason")).Text())
	require.Zero(t, doc.Find(testID("run-cancel")).Length(), "a finished run cannot be cancelled")
	require.Zero(t, doc.Find("[sse-connect]").Length(), "a finished run is not followed")
	require.Zero(t, doc.Find("script[src*='htmx-ext-sse.js']").Length())
	require.Equal(t, "2", doc.Find(testID("run-turns")).Text())
	require.Equal(t, "60", doc.Find(testID("run-input-tokens")).Text())
	require.Equal(t, "19", doc.Find(testID("run-output-tokens")).Text())
	require.Equal(t, "79", doc.Find(testID("run-total-tokens")).Text())
	calls := doc.Find(testID("usage-call")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-call-key", "") })
	require.Equal(t, []string{"lead:1", "lead:2"}, calls)
	evTypes := eventTypes(doc)
	require.Equal(t, "run.queued", evTypes[0])
	require.Equal(t, "run.completed", evTypes[len(evTypes)-1])
	for _, typ := range []string{"run.started", "message.delta", "tool.called", "tool.result", "usage", "message.completed"} {
		require.Contains(t, evTypes, typ)
	}
	require.Contains(t, doc.Find(testID("event")+`[data-type="tool.called"]`).Text(), `"name":"echo"`)
	require.Equal(t, "Let me echo that.The tool said: echo: ping.", doc.Find(testID("live-output")).Text())
	assertConversation(t, doc.Find(testID("run-messages")))
	require.Equal(t, threadPage, doc.Find(testID("run-thread")).AttrOr("href", ""))

	// The thread shows the same conversation and its run.
	_, doc = c.get(threadPage)
	assertConversation(t, doc.Find(testID("conversation")))
	row := doc.Find(testID("run-row"))
	require.Equal(t, 1, row.Length())
	require.Equal(t, "succeeded", row.Find(testID("run-row-status")).Text())
	require.Equal(t, runPage, row.Find(testID("run-link")).AttrOr("href", ""))

	// The runs page, filtered by status.
	runs := "/console/t/" + tn.Slug + "/runs"
	_, doc = c.get(runs)
	row = doc.Find(testID("run-row") + `[data-id="` + runID + `"]`)
	require.Equal(t, "please echo ping", row.Find(testID("run-link")).Text())
	require.Equal(t, "Support", row.Find(testID("run-thread-link")).Text())
	require.Equal(t, threadPage, row.Find(testID("run-thread-link")).AttrOr("href", ""))
	require.Contains(t, row.Text(), "79")
	_, doc = c.get(runs + "?status=succeeded")
	require.Equal(t, 1, doc.Find(testID("run-row")).Length())
	require.Equal(t, "succeeded", doc.Find(testID("runs-status-filter")+" option[selected]").AttrOr("value", ""))
	_, doc = c.get(runs + "?status=queued")
	require.Zero(t, doc.Find(testID("run-row")).Length())
	res, doc = c.get(runs + "?status=bogus")
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_status", doc.Find(testID("form-error")).AttrOr("data-code", ""))
}

// assertConversation checks the echo script's messages: the user's bubble,
// the assistant's text and tool call with pretty arguments, the tool's
// result and the final answer.
func assertConversation(t *testing.T, conv *goquery.Selection) {
	t.Helper()
	roles := conv.Find(testID("message")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-role", "") })
	require.Equal(t, []string{"user", "assistant", "tool", "assistant"}, roles)
	msgs := conv.Find(testID("message"))
	require.Equal(t, "please echo ping", msgs.Eq(0).Find(testID("message-text")).Text())
	require.Equal(t, "Let me echo that.", msgs.Eq(1).Find(testID("message-text")).Text())
	call := msgs.Eq(1).Find(testID("tool-call"))
	require.Equal(t, "echo", call.AttrOr("data-name", ""))
	require.Equal(t, "{\n  \"text\": \"ping\"\n}", call.Find("pre").Text())
	result := msgs.Eq(2).Find(testID("tool-result"))
	require.Equal(t, "c1", result.AttrOr("data-call-id", ""))
	require.Equal(t, "echo: ping", result.Find("pre").Text())
	require.Zero(t, result.Find("details").Length(), "short results are not collapsed")
	require.Equal(t, "The tool said: echo: ping.", msgs.Eq(3).Find(testID("message-text")).Text())
}

func TestLongToolResultIsCollapsed(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "runs-long")
	c, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	th, err := f.agents.CreateThread(t.Context(), systemAccess(tn), "")
	require.NoError(t, err)
	long := strings.Repeat("line of output\n", 20)
	run := f.startRun(t, tn, th.ID, "echo a lot")
	f.model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "echo", Arguments: mustJSON(t, map[string]string{"text": long})}}},
		llmtest.Reply{Content: "done"},
	)
	require.Equal(t, agent.StatusSucceeded, f.execute(t, tn, run.ID.String()).Status)

	_, doc := c.get("/console/t/" + tn.Slug + "/threads/" + th.ID.String())
	require.Equal(t, "Untitled thread", doc.Find(testID("thread-title-heading")).Text())
	details := doc.Find(testID("tool-result") + " details")
	require.Equal(t, 1, details.Length())
	require.Equal(t, "echo: "+long, details.Find("pre").Text())
	require.NotEmpty(t, details.Find("summary").Text())
}

func TestCancelQueuedRun(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "runs-cancel")
	c, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	th, err := f.agents.CreateThread(t.Context(), systemAccess(tn), "to cancel")
	require.NoError(t, err)
	run := f.startRun(t, tn, th.ID, "never mind")
	runPage := "/console/t/" + tn.Slug + "/runs/" + run.ID.String()

	_, doc := c.get(runPage)
	form := doc.Find(testID("run-cancel-form"))
	require.Equal(t, "Cancel this run?", form.AttrOr("hx-confirm", ""))
	require.Equal(t, 1, form.Find(`input[name="csrf_token"]`).Length())
	cancel := form.AttrOr("hx-post", "")
	require.Equal(t, runPage+"/cancel", cancel)

	// Without the token the request is refused.
	res, _ := c.send(http.MethodPost, cancel, url.Values{}, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	res, doc = c.htmx(http.MethodPost, cancel, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find("html > head title").Length(), "an htmx request gets the fragment")
	require.Equal(t, "Cancelled the run.", doc.Find(testID("flash")).Text())
	require.Equal(t, "cancelled", doc.Find(testID("run-status")).Text())
	require.Equal(t, "cancelled", doc.Find(testID("run-stop-reason")).Text())
	require.Zero(t, doc.Find(testID("run-cancel")).Length())
	require.Equal(t, "run.completed", eventTypes(doc)[len(eventTypes(doc))-1])
	got, err := f.agents.GetRun(t.Context(), systemAccess(tn), run.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCancelled, got.Status)

	// Idempotent, and the POST twin works without JavaScript.
	res, doc = c.send(http.MethodPost, cancel, url.Values{"csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, doc.Find(testID("flash")).Text(), "Cancelled")
}

func TestRunPagesPermissions(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t)
	tn := f.runTenant(t, "runs-perm")
	th, err := f.agents.CreateThread(t.Context(), systemAccess(tn), "watched")
	require.NoError(t, err)
	run := f.startRun(t, tn, th.ID, "hello")
	base := "/console/t/" + tn.Slug
	threadPage, runPage := base+"/threads/"+th.ID.String(), base+"/runs/"+run.ID.String()

	// A viewer reads everything but gets no forms, and cannot post.
	vc, _ := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	res, doc := vc.get(base + "/threads")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("thread-row")).Length())
	require.Zero(t, doc.Find(testID("create-thread-form")).Length())
	res, doc = vc.get(threadPage)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("send-message-form")).Length())
	require.Equal(t, 1, doc.Find(testID("run-row")).Length())
	res, doc = vc.get(runPage)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "queued", doc.Find(testID("run-status")).Text())
	require.Zero(t, doc.Find(testID("run-cancel")).Length())
	res, _ = vc.get(base + "/runs")
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = vc.htmx(http.MethodPost, base+"/threads", url.Values{"title": {"sneaky"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = vc.htmx(http.MethodPost, threadPage+"/runs", url.Values{"input": {"sneaky"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = vc.htmx(http.MethodPost, runPage+"/cancel", nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	got, err := f.agents.GetRun(t.Context(), systemAccess(tn), run.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusQueued, got.Status)
	page, err := f.agents.ListRuns(t.Context(), systemAccess(tn), agent.RunFilter{}, pageAll)
	require.NoError(t, err)
	require.Len(t, page.Runs, 1)

	// Another tenant's member does not learn the tenant exists, and its own
	// tenant's URLs do not reach this tenant's threads and runs.
	other := f.runTenant(t, "runs-other")
	oc, _ := f.login(t, f.member(t, other, "owner", policy.RoleOwner))
	for _, p := range []string{base + "/threads", threadPage, runPage, runPage + "/events"} {
		res, _ = oc.get(p)
		require.Equal(t, http.StatusNotFound, res.StatusCode, p)
	}
	ob := "/console/t/" + other.Slug
	for _, p := range []string{ob + "/threads/" + th.ID.String(), ob + "/runs/" + run.ID.String(), ob + "/runs/" + run.ID.String() + "/events", ob + "/runs/not-a-uuid"} {
		res, _ = oc.get(p)
		require.Equal(t, http.StatusNotFound, res.StatusCode, p)
	}
	res, _ = oc.htmx(http.MethodPost, ob+"/runs/"+run.ID.String()+"/cancel", nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = oc.htmx(http.MethodPost, ob+"/threads/"+th.ID.String()+"/runs", url.Values{"input": {"hi"}})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	got, err = f.agents.GetRun(t.Context(), systemAccess(tn), run.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusQueued, got.Status)

	// Without a session the stream sends the browser to the login page.
	res, _ = f.client(t).get(runPage + "/events")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
}

func TestRunEventStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		broker bool
	}{{"woken by the broker", true}, {"polling without one", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testRunEventStream(t, newRunsFixtureWith(t, tc.broker))
		})
	}
}

func testRunEventStream(t *testing.T, f *runsFixture) {
	tn := f.runTenant(t, "runs-sse")
	c, _ := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	th, err := f.agents.CreateThread(t.Context(), systemAccess(tn), "streamed")
	require.NoError(t, err)
	run := f.startRun(t, tn, th.ID, "please echo ping")
	events := "/console/t/" + tn.Slug + "/runs/" + run.ID.String() + "/events"

	// Follow the queued run live: the stream is open (its headers arrived)
	// before the run executes, so every frame comes from the live path.
	liveRes := c.openStream(events+"?after=1", "")
	got := make(chan []sseFrame, 1)
	go func() { got <- readFrames(t, liveRes) }()
	f.echoScript()
	require.Equal(t, agent.StatusSucceeded, f.execute(t, tn, run.ID.String()).Status)
	var live struct {
		res    *http.Response
		frames []sseFrame
	}
	live.res = liveRes
	select {
	case live.frames = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end after run.completed")
	}
	require.Equal(t, http.StatusOK, live.res.StatusCode)
	require.Equal(t, "text/event-stream", live.res.Header.Get("Content-Type"))
	rows := framesNamed(live.frames, "event")
	require.Greater(t, len(rows), 5)
	for i, fr := range rows {
		require.Equal(t, strconv.Itoa(i+2), fr.id, "rows resume after event 1, in order")
		doc := parseFragment(t, fr.data)
		require.Equal(t, fr.id, doc.Find(testID("event")).AttrOr("data-seq", ""))
	}
	lastRow := parseFragment(t, rows[len(rows)-1].data)
	require.Equal(t, "run.completed", lastRow.Find(testID("event")).AttrOr("data-type", ""))
	var text strings.Builder
	for _, fr := range framesNamed(live.frames, "delta") {
		text.WriteString(parseFragment(t, fr.data).Text())
	}
	require.Equal(t, "Let me echo that.The tool said: echo: ping.", text.String())

	// The last frame replaces the status area and, out of band, the messages.
	final := live.frames[len(live.frames)-1]
	require.Equal(t, "run.completed", final.event)
	doc := parseFragment(t, final.data)
	require.Equal(t, "succeeded", doc.Find(testID("run-summary")+" "+testID("run-status")).Text())
	require.Equal(t, "true", doc.Find(testID("run-messages")).AttrOr("hx-swap-oob", ""))
	assertConversation(t, doc.Find(testID("run-messages")))

	// A finished run streams its events from the start, or after
	// Last-Event-ID (which wins over ?after), and then ends.
	res, frames := c.stream(events, "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "1", framesNamed(frames, "event")[0].id)
	require.Len(t, framesNamed(frames, "event"), len(rows)+1)
	res, frames = c.stream(events+"?after=1", "3")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "4", framesNamed(frames, "event")[0].id)
	require.Equal(t, "run.completed", frames[len(frames)-1].event)

	// Nothing left to send: 204, which tells EventSource to stop.
	res, frames = c.stream(events, rows[len(rows)-1].id)
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	require.Empty(t, frames)
}

// startRun creates a queued run behind the console's back.
func (f *runsFixture) startRun(t *testing.T, tn tenants.Tenant, thread uuid.UUID, input string) agent.Run {
	t.Helper()
	owner := f.member(t, tn, "starter-"+randomHex(3), policy.RoleDeveloper)
	u, err := f.svc.EnsureUser(t.Context(), owner, testPassword, false)
	require.NoError(t, err)
	a, err := f.svc.Resolve(t.Context(), u.Principal(), tn.Slug)
	require.NoError(t, err)
	run, _, err := f.agents.CreateRun(t.Context(), a, thread, agent.CreateRunInput{Input: input})
	require.NoError(t, err)
	return run
}

// sseFrame is one Server-Sent Event.
type sseFrame struct {
	id, event, data string
}

// stream reads a console event stream to its end.
func (c *client) stream(path, lastEventID string) (*http.Response, []sseFrame) {
	c.t.Helper()
	res := c.openStream(path, lastEventID)
	return res, readFrames(c.t, res)
}

// openStream requests a console event stream and returns once the
// response headers arrived; the body is closed when the test ends.
func (c *client) openStream(path, lastEventID string) *http.Response {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 30*time.Second)
	c.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// readFrames reads a stream to its end and splits it into frames. It may
// run in another goroutine, so it reports failures with Errorf.
func readFrames(t *testing.T, res *http.Response) []sseFrame {
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("read stream: %v", err)
	}
	var frames []sseFrame
	for block := range strings.SplitSeq(string(body), "\n\n") {
		var fr sseFrame
		var data []string
		for line := range strings.SplitSeq(block, "\n") {
			switch {
			case strings.HasPrefix(line, "id: "):
				fr.id = line[len("id: "):]
			case strings.HasPrefix(line, "event: "):
				fr.event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = append(data, line[len("data: "):])
			}
		}
		if fr.event != "" {
			fr.data = strings.Join(data, "\n")
			frames = append(frames, fr)
		}
	}
	return frames
}

func framesNamed(frames []sseFrame, event string) []sseFrame {
	var out []sseFrame
	for _, f := range frames {
		if f.event == event {
			out = append(out, f)
		}
	}
	return out
}

func parseFragment(t *testing.T, html string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	require.NoError(t, err)
	return doc
}

func eventTypes(doc *goquery.Document) []string {
	return doc.Find(testID("event")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-type", "") })
}

func first[A, B any](a A, _ B) A { return a }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// echoTool returns its "text" argument.
func echoTool() tools.Tool { return agenttest.EchoTool() }
