package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

const sectionThreads = "threads"

// maxMessages bounds the messages a conversation page loads.
const maxMessages = 1000

// A tool result longer than this (in characters or lines) is collapsed.
const (
	longResultChars = 400
	longResultLines = 8
)

// threadRoutes mirrors the thread-* API operations and their permissions.
func (c *Console) threadRoutes(r chi.Router) {
	r.With(c.need(policy.ThreadRead)).Get("/threads", c.threadsPage)
	r.With(c.need(policy.ThreadWrite)).Post("/threads", c.createThread)
	r.With(c.need(policy.ThreadRead)).Get("/threads/{thread}", c.threadPage)
	c.fileRoutes(r)
}

func (c *Console) threadsPage(w http.ResponseWriter, r *http.Request) {
	c.showThreads(w, r, http.StatusOK, ui.ThreadsView{})
}

// showThreads renders the threads page around what a form left in v.
func (c *Console) showThreads(w http.ResponseWriter, r *http.Request, status int, v ui.ThreadsView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	page, err := c.deps.Agents.ListThreads(ctx, a, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant = a.Tenant.Slug
	v.CanWrite = c.can(ctx, policy.ThreadWrite)
	for _, t := range page.Threads {
		v.Threads = append(v.Threads, ui.ThreadRow{
			ID: t.ID.String(), Title: threadTitle(t), Href: threadPath(v.Tenant, t.ID),
			Created: fmtTime(t.CreatedAt), Updated: fmtTime(t.UpdatedAt),
		})
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionThreads), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "Threads", sectionThreads, ui.ThreadsPage(v))
}

// createThread starts a thread and opens it.
func (c *Console) createThread(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	title := strings.TrimSpace(r.PostFormValue("title"))
	th, err := c.deps.Agents.CreateThread(ctx, a, title)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showThreads(w, r, status, ui.ThreadsView{Title: title, Notice: n})
		return
	}
	redirect(w, r, threadPath(a.Tenant.Slug, th.ID))
}

func (c *Console) threadPage(w http.ResponseWriter, r *http.Request) {
	id, ok := c.pathID(w, r, "thread")
	if !ok {
		return
	}
	c.showThread(w, r, http.StatusOK, id, ui.ThreadView{})
}

// showThread renders a conversation around what the message form left in
// v. The runs list needs run:read, the form run:write, and the agent
// select agent:read (without it, only the default agent is offered).
func (c *Console) showThread(w http.ResponseWriter, r *http.Request, status int, id uuid.UUID, v ui.ThreadView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	th, err := c.deps.Agents.GetThread(ctx, a, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	msgs, truncated, err := c.threadMessages(ctx, a, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant, v.ID, v.Title, v.Created = a.Tenant.Slug, id.String(), threadTitle(th), fmtTime(th.CreatedAt)
	v.Messages, v.Truncated = messageViews(msgs), truncated
	if v.CanReadRuns = c.can(ctx, policy.RunRead); v.CanReadRuns {
		page, err := c.deps.Agents.ListRuns(ctx, a, agent.RunFilter{ThreadID: &id}, tenants.Page{Limit: listLimit})
		if err != nil {
			c.fail(w, r, err)
			return
		}
		v.Runs = c.runRows(ctx, a, page.Runs, false)
	}
	if v.CanRun = c.can(ctx, policy.RunWrite); v.CanRun {
		if v.Agents, err = c.agentChoices(ctx, a); err != nil {
			c.fail(w, r, err)
			return
		}
		if v.Form.Agent == "" {
			v.Form.Agent = agent.DefaultAgentName
		}
		// A fresh key per rendered form: resubmitting the same form (a
		// double click, a retried request) returns the run it started.
		v.Form.IdempotencyKey = "console-" + newToken()
	}
	files, err := c.threadFiles(ctx, a, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, status, v.Title, sectionThreads, templ.Join(ui.ThreadPage(v), ui.ThreadFiles(files)))
}

// agentChoices lists the agents a run may name (first page).
func (c *Console) agentChoices(ctx context.Context, a tenants.Access) ([]string, error) {
	if !c.can(ctx, policy.AgentRead) {
		return []string{agent.DefaultAgentName}, nil
	}
	page, err := c.deps.Agents.ListAgents(ctx, a, tenants.Page{Limit: 200})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(page.Agents))
	for _, ag := range page.Agents {
		names = append(names, ag.Name)
	}
	return names, nil
}

// threadMessages reads a thread's log from the start, up to maxMessages;
// truncated says there is more.
func (c *Console) threadMessages(ctx context.Context, a tenants.Access, id uuid.UUID) (msgs []agent.Message, truncated bool, err error) {
	var after int64
	for {
		page, err := c.deps.Agents.ListMessages(ctx, a, id, after, 200)
		if err != nil {
			return nil, false, err
		}
		msgs = append(msgs, page.Messages...)
		if page.NextAfter == 0 {
			return msgs, false, nil
		}
		if len(msgs) >= maxMessages {
			return msgs, true, nil
		}
		after = page.NextAfter
	}
}

// messageViews turns the log into what the conversation shows.
func messageViews(msgs []agent.Message) []ui.MessageView {
	out := make([]ui.MessageView, 0, len(msgs))
	for _, m := range msgs {
		v := ui.MessageView{
			Seq: itoa(m.Seq), Role: m.Role, Content: m.Content,
			ToolName: m.ToolName, ToolCallID: m.ToolCallID,
		}
		for _, tc := range m.ToolCalls {
			v.ToolCalls = append(v.ToolCalls, ui.ToolCallView{ID: tc.ID, Name: tc.Name, Args: prettyJSON(tc.Arguments)})
		}
		if m.Role == "tool" && isLong(m.Content) {
			v.Long, v.Preview = true, preview(m.Content, 100)
		}
		out = append(out, v)
	}
	return out
}

// prettyJSON indents a tool call's arguments; text that is not JSON is
// shown as it came.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

func isLong(s string) bool {
	return utf8.RuneCountInString(s) > longResultChars || strings.Count(s, "\n") >= longResultLines
}

// threadTitle is the title a thread is listed under.
func threadTitle(t agent.Thread) string {
	if t.Title == "" {
		return "Untitled thread"
	}
	return t.Title
}

func threadPath(tenant string, id uuid.UUID) string {
	return ui.TenantPath(tenant, sectionThreads, id.String())
}
