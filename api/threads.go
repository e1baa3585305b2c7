package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// ThreadOut is a thread on the wire.
type ThreadOut struct {
	ID        string    `json:"id" format:"uuid" doc:"Thread id."`
	Title     string    `json:"title" doc:"Optional title."`
	CreatedBy string    `json:"created_by" doc:"Principal that created the thread."`
	CreatedAt time.Time `json:"created_at" doc:"Creation time."`
	// Usage is filled by thread-get only (it sums the ledger).
	Usage *ThreadUsageOut `json:"usage,omitempty" doc:"Token totals over the thread's runs (thread-get only)."`
}

// ThreadUsageOut totals a thread's model calls.
type ThreadUsageOut struct {
	InputTokens     int64 `json:"input_tokens" doc:"Prompt tokens."`
	OutputTokens    int64 `json:"output_tokens" doc:"Completion tokens."`
	CacheReadTokens int64 `json:"cache_read_tokens" doc:"Prompt tokens served from the endpoint's cache."`
	TotalTokens     int64 `json:"total_tokens" doc:"Sum reported by the model endpoints."`
	Calls           int64 `json:"calls" doc:"Model calls made."`
}

func threadOut(t agent.Thread) ThreadOut {
	return ThreadOut{ID: t.ID.String(), Title: t.Title, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt}
}

type ThreadPath struct {
	TenantPath
	Thread string `path:"thread" format:"uuid" doc:"Thread id."`
}

type threadCreateIn struct {
	TenantPath
	Body struct {
		Title string `json:"title,omitempty" maxLength:"200" doc:"Optional title." example:"Quarterly report"`
	}
}

type threadOutBody struct{ Body ThreadOut }

type threadListIn struct {
	TenantPath
	PageQuery
}

type threadListOut struct {
	Body struct {
		Threads    []ThreadOut `json:"threads" doc:"Newest first."`
		NextCursor string      `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

// MessageOut is one entry of a thread's message log.
type MessageOut struct {
	Seq        int64            `json:"seq" doc:"Position in the thread."`
	RunID      string           `json:"run_id" format:"uuid" doc:"The run that wrote it."`
	Role       string           `json:"role" enum:"user,assistant,tool" doc:"Who spoke."`
	Content    string           `json:"content" doc:"Text (for tool messages, the tool's result)."`
	ToolCalls  []agent.ToolCall `json:"tool_calls,omitempty" doc:"Tools the assistant asked for."`
	ToolCallID string           `json:"tool_call_id,omitempty" doc:"For tool messages: the call answered."`
	ToolName   string           `json:"tool_name,omitempty" doc:"For tool messages: the tool."`
	CreatedAt  time.Time        `json:"created_at" doc:"When it was stored."`
}

type messageListIn struct {
	ThreadPath
	After int64 `query:"after" minimum:"0" doc:"Only messages after this sequence number."`
	Limit int   `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Page size."`
}

type messageListOut struct {
	Body struct {
		Messages  []MessageOut `json:"messages" doc:"Oldest first."`
		NextAfter int64        `json:"next_after,omitempty" doc:"Pass as after= for the next page; absent on the last page."`
	}
}

func (s *Server) registerThreads(api huma.API) {
	create := op("thread-create", http.MethodPost, "/v1/tenants/{tenant}/threads", "Create a thread", policy.ThreadWrite, "Threads")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *threadCreateIn) (*threadOutBody, error) {
		t, err := s.deps.Agents.CreateThread(ctx, accessFrom(ctx), in.Body.Title)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &threadOutBody{Body: threadOut(t)}, nil
	})

	huma.Register(api, op("thread-list", http.MethodGet, "/v1/tenants/{tenant}/threads", "List threads", policy.ThreadRead, "Threads"),
		func(ctx context.Context, in *threadListIn) (*threadListOut, error) {
			page, err := s.deps.Agents.ListThreads(ctx, accessFrom(ctx), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &threadListOut{}
			out.Body.Threads = make([]ThreadOut, len(page.Threads))
			for i, t := range page.Threads {
				out.Body.Threads[i] = threadOut(t)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	huma.Register(api, op("thread-get", http.MethodGet, "/v1/tenants/{tenant}/threads/{thread}", "Get a thread", policy.ThreadRead, "Threads"),
		func(ctx context.Context, in *ThreadPath) (*threadOutBody, error) {
			id := uuid.MustParse(in.Thread)
			t, err := s.deps.Agents.GetThread(ctx, accessFrom(ctx), id)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			u, err := s.deps.Agents.ThreadUsage(ctx, accessFrom(ctx), id)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := threadOut(t)
			out.Usage = &ThreadUsageOut{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, TotalTokens: u.TotalTokens, Calls: u.Calls}
			return &threadOutBody{Body: out}, nil
		})

	del := op("thread-delete", http.MethodDelete, "/v1/tenants/{tenant}/threads/{thread}", "Delete a thread", policy.ThreadWrite, "Threads")
	del.DefaultStatus = http.StatusNoContent
	huma.Register(api, del, func(ctx context.Context, in *ThreadPath) (*struct{}, error) {
		if err := s.deps.Agents.DeleteThread(ctx, accessFrom(ctx), uuid.MustParse(in.Thread)); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})

	huma.Register(api, op("message-list", http.MethodGet, "/v1/tenants/{tenant}/threads/{thread}/messages", "List a thread's messages", policy.ThreadRead, "Threads"),
		func(ctx context.Context, in *messageListIn) (*messageListOut, error) {
			page, err := s.deps.Agents.ListMessages(ctx, accessFrom(ctx), uuid.MustParse(in.Thread), in.After, in.Limit)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &messageListOut{}
			out.Body.Messages = make([]MessageOut, len(page.Messages))
			for i, m := range page.Messages {
				out.Body.Messages[i] = MessageOut{
					Seq: m.Seq, RunID: m.RunID.String(), Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls,
					ToolCallID: m.ToolCallID, ToolName: m.ToolName, CreatedAt: m.CreatedAt,
				}
			}
			out.Body.NextAfter = page.NextAfter
			return out, nil
		})
}
