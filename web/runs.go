package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

const sectionRuns = "runs"

// runStatuses are the status filter's values, in lifecycle order.
var runStatuses = []string{
	agent.StatusQueued, agent.StatusRunning, agent.StatusSucceeded,
	agent.StatusFailed, agent.StatusCancelled, agent.StatusTimedOut,
}

const (
	// maxEvents bounds the events a run page renders; a live page follows
	// the rest through the stream.
	maxEvents = 5000
	// eventDataChars bounds an event row's data.
	eventDataChars = 300
	// streamKeepalive is how often an idle stream sends a comment and
	// re-reads the table (covering a notification lost in a reconnect);
	// streamPoll replaces the broker's wake-ups when there is none.
	streamKeepalive = 15 * time.Second
	streamPoll      = time.Second
)

// runRoutes mirrors the run-* API operations and their permissions; the
// event stream is run-events for a session instead of an API key.
func (c *Console) runRoutes(r chi.Router) {
	r.With(c.need(policy.RunWrite)).Post("/threads/{thread}/runs", c.createRun)
	r.With(c.need(policy.RunRead)).Get("/runs", c.runsPage)
	r.With(c.need(policy.RunRead)).Get("/runs/{run}", c.runPage)
	r.With(c.need(policy.RunRead)).Get("/runs/{run}/events", c.runEvents)
	r.With(c.need(policy.RunWrite)).Post("/runs/{run}/cancel", c.cancelRun)
}

// runsPage lists runs; the status filter is a GET parameter, so a
// filtered view is a link.
func (c *Console) runsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	q := r.URL.Query()
	v := ui.RunsView{Tenant: a.Tenant.Slug, Status: q.Get("status"), Statuses: runStatuses}
	show := func(status int) { c.render(w, r, status, "Runs", sectionRuns, ui.RunsPage(v)) }
	if v.Status != "" && !slices.Contains(runStatuses, v.Status) {
		v.Status, v.Notice = "", invalid("status", "must be one of "+strings.Join(runStatuses, ", "))
		show(http.StatusUnprocessableEntity)
		return
	}
	page, err := c.deps.Agents.ListRuns(ctx, a, agent.RunFilter{Status: v.Status}, tenants.Page{Limit: listLimit, Cursor: q.Get("cursor")})
	if err != nil {
		var status int
		status, v.Notice = c.describe(ctx, err)
		show(status)
		return
	}
	v.Runs = c.runRows(ctx, a, page.Runs, true)
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionRuns), q, page.NextCursor)
	show(http.StatusOK)
}

// runRows builds list rows; withThread looks up the threads' titles.
func (c *Console) runRows(ctx context.Context, a tenants.Access, runs []agent.Run, withThread bool) []ui.RunRow {
	titles := map[uuid.UUID]*agent.Thread{}
	out := make([]ui.RunRow, 0, len(runs))
	for _, run := range runs {
		row := ui.RunRow{
			ID: run.ID.String(), Href: runPath(a.Tenant.Slug, run.ID), Label: preview(run.Input, 60),
			Status: run.Status, Agent: run.AgentName, Turns: strconv.Itoa(run.Turns), Tokens: itoa(run.TotalTokens),
			Created: fmtTime(run.CreatedAt), Finished: fmtOptTime(run.FinishedAt, "—"),
		}
		if withThread {
			th, seen := titles[run.ThreadID]
			if !seen {
				th = c.lookupThread(ctx, a, run.ThreadID)
				titles[run.ThreadID] = th
			}
			row.ThreadTitle, row.ThreadHref = threadLink(a, run.ThreadID, th)
		}
		out = append(out, row)
	}
	return out
}

// lookupThread returns the run's thread when the viewer may read it and it
// still exists, else nil.
func (c *Console) lookupThread(ctx context.Context, a tenants.Access, id uuid.UUID) *agent.Thread {
	if !c.can(ctx, policy.ThreadRead) {
		return nil
	}
	th, err := c.deps.Agents.GetThread(ctx, a, id)
	if err != nil {
		if !isNotFound(err) {
			c.log.ErrorContext(ctx, "console thread lookup", slog.String("thread_id", id.String()), slog.String("error", err.Error()))
		}
		return nil
	}
	return &th
}

func threadLink(a tenants.Access, id uuid.UUID, th *agent.Thread) (title, href string) {
	if th == nil {
		return "thread unavailable", ""
	}
	return threadTitle(*th), threadPath(a.Tenant.Slug, id)
}

// createRun sends a message: it starts a run on the thread and opens the
// run's page. Errors come back on the thread page with the text kept.
func (c *Console) createRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	threadID, ok := c.pathID(w, r, "thread")
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		c.showThread(w, r, http.StatusRequestEntityTooLarge, threadID, ui.ThreadView{
			Notice: invalid("input", "is too long for the console; send it through the API"),
		})
		return
	}
	form := ui.RunForm{Agent: r.PostFormValue("agent"), Input: r.PostFormValue("input")}
	run, _, err := c.deps.Agents.CreateRun(ctx, a, threadID, agent.CreateRunInput{
		Agent: form.Agent, Input: form.Input, IdempotencyKey: r.PostFormValue("idempotency_key"),
	})
	if err != nil {
		status, n := c.describeRunError(ctx, err)
		c.showThread(w, r, status, threadID, ui.ThreadView{Form: form, Notice: n})
		return
	}
	redirect(w, r, runPath(a.Tenant.Slug, run.ID))
}

// describeRunError adds the run errors the console's table does not know.
func (c *Console) describeRunError(ctx context.Context, err error) (int, ui.Notice) {
	var big *agent.TooLargeError
	if errors.As(err, &big) {
		return http.StatusRequestEntityTooLarge, invalid(big.Field, fmt.Sprintf("must be at most %d bytes", big.Limit))
	}
	var nf *tenants.NotFoundError
	if errors.As(err, &nf) && nf.Kind == "agent" {
		return http.StatusUnprocessableEntity, invalid("agent", "there is no agent “"+nf.Key+"”")
	}
	return c.describe(ctx, err)
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	id, ok := c.pathID(w, r, "run")
	if !ok {
		return
	}
	c.showRun(w, r, http.StatusOK, id, ui.Notice{})
}

func (c *Console) showRun(w http.ResponseWriter, r *http.Request, status int, id uuid.UUID, n ui.Notice) {
	v, err := c.runView(r.Context(), visitFrom(r.Context()).access, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Notice = n
	files, err := c.runFiles(r.Context(), visitFrom(r.Context()).access, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	deliveries := c.runDeliveries(r.Context(), visitFrom(r.Context()).access, id)
	c.render(w, r, status, "Run", sectionRuns, templ.Join(ui.RunPage(v), ui.RunFiles(files, false), deliveries))
}

// cancelRun cancels a run (idempotent) and shows it again.
func (c *Console) cancelRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, ok := c.pathID(w, r, "run")
	if !ok {
		return
	}
	run, err := c.deps.Agents.CancelRun(ctx, visitFrom(ctx).access, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	n := done("Cancellation requested; the run stops at its next step.")
	switch {
	case run.Status == agent.StatusCancelled:
		n = done("Cancelled the run.")
	case run.Terminal():
		n = done("The run had already ended (" + run.Status + ").")
	}
	c.showRun(w, r, http.StatusOK, id, n)
}

// runView reads everything the run page shows.
func (c *Console) runView(ctx context.Context, a tenants.Access, id uuid.UUID) (ui.RunView, error) {
	run, err := c.deps.Agents.GetRun(ctx, a, id)
	if err != nil {
		return ui.RunView{}, err
	}
	evs, truncated, err := c.runEventList(ctx, a, id)
	if err != nil {
		return ui.RunView{}, err
	}
	th := c.lookupThread(ctx, a, run.ThreadID)
	v := ui.RunView{
		Tenant: a.Tenant.Slug, Summary: c.runSummary(ctx, a, run, th, evs),
		EventsTruncated: truncated, CanReadThread: th != nil,
	}
	if th != nil {
		msgs, _, err := c.threadMessages(ctx, a, run.ThreadID)
		if err != nil && !isNotFound(err) {
			return ui.RunView{}, err
		}
		v.Messages, v.ThreadHref = runMessages(run, msgs), threadPath(a.Tenant.Slug, run.ThreadID)
	}
	var last int64
	for _, e := range evs {
		v.Events = append(v.Events, eventView(e))
		if chunk, ok := outputChunk(e); ok {
			v.Output = append(v.Output, chunk)
		}
		last = e.Seq
	}
	if !run.Terminal() {
		v.Live = &ui.LiveStream{
			URL:    ui.WithQuery(runPath(a.Tenant.Slug, id)+"/events", url.Values{"after": {itoa(last)}}),
			Script: c.static.url("vendor/htmx-ext-sse.js"),
		}
	}
	return v, nil
}

// runEventList reads a run's events from the start, up to maxEvents.
func (c *Console) runEventList(ctx context.Context, a tenants.Access, id uuid.UUID) (evs []agent.Event, truncated bool, err error) {
	var after int64
	for {
		page, err := c.deps.Agents.ListEvents(ctx, a, id, after, 1000)
		if err != nil {
			return nil, false, err
		}
		evs = append(evs, page...)
		if len(page) < 1000 {
			return evs, false, nil
		}
		if len(evs) >= maxEvents {
			return evs, true, nil
		}
		after = page[len(page)-1].Seq
	}
}

// runMessages is the run's part of the thread. Until the run starts, its
// input is not in the log yet; it is shown as pending.
func runMessages(run agent.Run, msgs []agent.Message) []ui.MessageView {
	var mine []agent.Message
	hasInput := false
	for _, m := range msgs {
		if m.RunID == run.ID {
			mine = append(mine, m)
			hasInput = hasInput || m.Role == "user"
		}
	}
	out := messageViews(mine)
	if !hasInput {
		in := ui.MessageView{Role: "user", Content: run.Input, Pending: run.Status == agent.StatusQueued}
		out = append([]ui.MessageView{in}, out...)
	}
	return out
}

// runSummary builds the status area.
func (c *Console) runSummary(ctx context.Context, a tenants.Access, run agent.Run, th *agent.Thread, evs []agent.Event) ui.RunSummary {
	s := ui.RunSummary{
		Status: run.Status, StopReason: run.StopReason, Error: run.Error, Agent: run.AgentName,
		Turns: strconv.Itoa(run.Turns), Created: fmtTime(run.CreatedAt),
		Started: fmtOptTime(run.StartedAt, "—"), Finished: fmtOptTime(run.FinishedAt, "—"),
		Usage: ui.UsageView{
			InputTokens: itoa(run.InputTokens), OutputTokens: itoa(run.OutputTokens),
			TotalTokens: itoa(run.TotalTokens), Calls: usageCalls(evs),
		},
	}
	s.ThreadTitle, s.ThreadHref = threadLink(a, run.ThreadID, th)
	if run.StartedAt != nil && run.FinishedAt != nil {
		s.Duration = run.FinishedAt.Sub(*run.StartedAt).Round(time.Millisecond).String()
	}
	if !run.Terminal() && c.can(ctx, policy.RunWrite) {
		s.CancelURL = runPath(a.Tenant.Slug, run.ID) + "/cancel"
	}
	return s
}

// usageCalls lists the run's model calls from its usage events, which are
// stored in the same transaction as the usage ledger's rows. A call key
// seen twice (a resumed step) counts once, like in the ledger.
func usageCalls(evs []agent.Event) []ui.UsageCall {
	var out []ui.UsageCall
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Type != agent.EventUsage {
			continue
		}
		var u struct {
			CallKey      string `json:"call_key"`
			Caller       string `json:"caller"`
			Model        string `json:"model"`
			InputTokens  int64  `json:"input_tokens"`
			OutputTokens int64  `json:"output_tokens"`
			TotalTokens  int64  `json:"total_tokens"`
			LatencyMS    int64  `json:"latency_ms"`
		}
		if json.Unmarshal(e.Data, &u) != nil || seen[u.CallKey] {
			continue
		}
		seen[u.CallKey] = true
		out = append(out, ui.UsageCall{
			CallKey: u.CallKey, Caller: u.Caller, Model: u.Model, InputTokens: itoa(u.InputTokens),
			OutputTokens: itoa(u.OutputTokens), TotalTokens: itoa(u.TotalTokens), Latency: itoa(u.LatencyMS) + " ms",
		})
	}
	return out
}

// eventView is an event's log row: its data as compact JSON, shortened.
func eventView(e agent.Event) ui.EventView {
	data := string(e.Data)
	var buf bytes.Buffer
	if json.Compact(&buf, e.Data) == nil {
		data = buf.String()
	}
	if len([]rune(data)) > eventDataChars {
		data = string([]rune(data)[:eventDataChars-1]) + "…"
	}
	return ui.EventView{Seq: itoa(e.Seq), Type: e.Type, Time: e.CreatedAt.UTC().Format("15:04:05.000"), Data: data}
}

// outputChunk is what an event adds to the live output: a delta's text,
// or a break after a model call that produced text.
func outputChunk(e agent.Event) (ui.OutputChunk, bool) {
	var d struct {
		Text    string `json:"text"`
		Content string `json:"content"`
	}
	switch e.Type {
	case agent.EventMessageDelta:
		if json.Unmarshal(e.Data, &d) == nil && d.Text != "" {
			return ui.OutputChunk{Text: d.Text}, true
		}
	case agent.EventMessageCompleted:
		if json.Unmarshal(e.Data, &d) == nil && d.Content != "" {
			return ui.OutputChunk{Break: true}, true
		}
	}
	return ui.OutputChunk{}, false
}

// runEvents is the run page's live feed: Server-Sent Events like the API's
// run-events stream (id = seq, Last-Event-ID resumes, the stream ends after
// run.completed), authenticated by the console session. Its frames carry
// markup for the htmx SSE extension: "event" is the log row, "delta" what
// the event adds to the live output, and a final "run.completed" frame the
// new status area (and the messages, out of band).
func (c *Console) runEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	id, ok := c.pathID(w, r, "run")
	if !ok {
		return
	}
	var after int64
	if n, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64); err == nil && n >= 0 {
		after = n
	}
	if n, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && n >= 0 {
		after = n
	}
	run, err := c.deps.Agents.GetRun(ctx, a, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.streamEvents(w, r, a, run, after)
}

// streamEvents writes the frames after after, then follows the run until
// it completes or the client leaves.
func (c *Console) streamEvents(w http.ResponseWriter, r *http.Request, a tenants.Access, run agent.Run, after int64) {
	ctx := r.Context()
	// Subscribe before reading: an event stored in between still wakes us.
	var wake <-chan struct{}
	every := streamPoll
	if c.deps.Broker != nil {
		ch, unsubscribe := c.deps.Broker.Subscribe(run.ID)
		defer unsubscribe()
		wake, every = ch, streamKeepalive
	}
	evs, err := c.deps.Agents.EventsAfter(ctx, a.Tenant.ID, run.ID, after)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if len(evs) == 0 && run.Terminal() {
		// Everything was seen; 204 also tells EventSource not to reconnect.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives a server's write timeout
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for _, e := range evs {
			if err := c.writeEvent(ctx, w, a, run.ID, e); err != nil {
				return
			}
			after = e.Seq
			if e.Type == agent.EventRunCompleted {
				_ = rc.Flush()
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
		}
		if evs, err = c.deps.Agents.EventsAfter(ctx, a.Tenant.ID, run.ID, after); err != nil {
			if ctx.Err() == nil {
				c.log.WarnContext(ctx, "console event stream read failed", slog.String("run_id", run.ID.String()), slog.String("error", err.Error()))
			}
			return
		}
	}
}

// writeEvent writes one event's frames in a single write.
func (c *Console) writeEvent(ctx context.Context, w http.ResponseWriter, a tenants.Access, runID uuid.UUID, e agent.Event) error {
	var b bytes.Buffer
	row, err := renderHTML(ctx, ui.EventRow(eventView(e)))
	if err != nil {
		return err
	}
	writeFrame(&b, itoa(e.Seq), "event", row)
	if chunk, ok := outputChunk(e); ok {
		out, err := renderHTML(ctx, ui.OutputPiece(chunk))
		if err != nil {
			return err
		}
		writeFrame(&b, "", "delta", out)
	}
	if e.Type == agent.EventRunCompleted {
		final, err := c.completedHTML(ctx, a, runID)
		if err != nil {
			c.log.ErrorContext(ctx, "console run completion", slog.String("run_id", runID.String()), slog.String("error", err.Error()))
		} else {
			writeFrame(&b, "", agent.EventRunCompleted, final)
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// completedHTML is the run's final status area and, out of band, its
// messages.
func (c *Console) completedHTML(ctx context.Context, a tenants.Access, runID uuid.UUID) (string, error) {
	v, err := c.runView(ctx, a, runID)
	if err != nil {
		return "", err
	}
	parts := []templ.Component{ui.RunSummaryPanel(v.Summary)}
	if v.CanReadThread {
		parts = append(parts, ui.RunMessages(v.Messages, v.ThreadHref, true))
	}
	files, err := c.runFiles(ctx, a, runID)
	if err != nil {
		return "", err
	}
	parts = append(parts, ui.RunFiles(files, true))
	return renderHTML(ctx, templ.Join(parts...))
}

// writeFrame appends one SSE frame; every line of data gets its own
// "data:" field, which EventSource joins with newlines again.
func writeFrame(b *bytes.Buffer, id, event, data string) {
	if id != "" {
		fmt.Fprintf(b, "id: %s\n", id)
	}
	fmt.Fprintf(b, "event: %s\n", event)
	data = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

func renderHTML(ctx context.Context, comp templ.Component) (string, error) {
	var buf bytes.Buffer
	if err := comp.Render(ctx, &buf); err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return buf.String(), nil
}

func runPath(tenant string, id uuid.UUID) string {
	return ui.TenantPath(tenant, sectionRuns, id.String())
}

func isNotFound(err error) bool {
	var nf *tenants.NotFoundError
	return errors.As(err, &nf)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
