package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
	"github.com/agentplane/agentplane/tenants/usage"
)

// Thread is a conversation; runs happen on it one at a time.
type Thread struct {
	ID        uuid.UUID
	TenantID  uuid.UUID
	Title     string
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func threadFromRow(r agentdb.Thread) Thread {
	return Thread{ID: r.ID, TenantID: r.TenantID, Title: r.Title, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// CreateThread starts an empty conversation.
func (s *Service) CreateThread(ctx context.Context, a tenants.Access, title string) (Thread, error) {
	if len(title) > 200 {
		return Thread{}, &InvalidError{Field: "title", Message: "must be at most 200 characters"}
	}
	row, err := agentdb.New(s.pool).CreateThread(ctx, agentdb.CreateThreadParams{
		TenantID: a.Tenant.ID, ID: uuid.Must(uuid.NewV7()), Title: title, CreatedBy: a.Principal.String(),
	})
	if err != nil {
		return Thread{}, fmt.Errorf("create thread: %w", err)
	}
	return threadFromRow(row), nil
}

// GetThread returns one live thread of the tenant.
func (s *Service) GetThread(ctx context.Context, a tenants.Access, id uuid.UUID) (Thread, error) {
	row, err := agentdb.New(s.pool).ThreadByID(ctx, agentdb.ThreadByIDParams{TenantID: a.Tenant.ID, ID: id})
	if err != nil {
		return Thread{}, notFound(err, "thread", id.String())
	}
	return threadFromRow(row), nil
}

// ThreadPage is one page of threads, newest first.
type ThreadPage struct {
	Threads    []Thread
	NextCursor string
}

// ListThreads lists the tenant's threads, newest first.
func (s *Service) ListThreads(ctx context.Context, a tenants.Access, p tenants.Page) (ThreadPage, error) {
	before, err := pageBefore(p)
	if err != nil {
		return ThreadPage{}, err
	}
	lim := pageLimit(p)
	rows, err := agentdb.New(s.pool).ListThreads(ctx, agentdb.ListThreadsParams{TenantID: a.Tenant.ID, Before: before, Lim: lim})
	if err != nil {
		return ThreadPage{}, fmt.Errorf("list threads: %w", err)
	}
	out := ThreadPage{Threads: make([]Thread, len(rows))}
	for i, r := range rows {
		out.Threads[i] = threadFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = pageNext(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// DeleteThread hides a thread. A thread with a queued or running run cannot
// be deleted; cancel the run first.
func (s *Service) DeleteThread(ctx context.Context, a tenants.Access, id uuid.UUID) error {
	return pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		q := agentdb.New(tx)
		active, err := q.ThreadHasActiveRun(ctx, agentdb.ThreadHasActiveRunParams{TenantID: a.Tenant.ID, ThreadID: id})
		if err != nil {
			return fmt.Errorf("delete thread %s: %w", id, err)
		}
		if active {
			return &ConflictError{Code: "thread_busy", Message: "the thread has a queued or running run; cancel it first"}
		}
		n, err := q.DeleteThread(ctx, agentdb.DeleteThreadParams{TenantID: a.Tenant.ID, ID: id})
		if err != nil {
			return fmt.Errorf("delete thread %s: %w", id, err)
		}
		if n == 0 {
			return &NotFoundError{Kind: "thread", Key: id.String()}
		}
		return audit.Record(ctx, tx, audit.Event{
			TenantID: a.Tenant.ID, Actor: a.Principal, Action: "thread.delete",
			TargetKind: "thread", TargetID: id.String(), Diff: map[string]any{},
		})
	})
}

// Message is one entry of a thread's durable log.
type Message struct {
	Seq        int64
	RunID      uuid.UUID
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	ToolName   string
	CreatedAt  time.Time
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func messageFromRow(r agentdb.Message) Message {
	m := Message{Seq: r.Seq, RunID: r.RunID, Role: r.Role, Content: r.Content, CreatedAt: r.CreatedAt}
	if len(r.ToolCalls) > 0 {
		_ = json.Unmarshal(r.ToolCalls, &m.ToolCalls)
	}
	if r.ToolCallID != nil {
		m.ToolCallID = *r.ToolCallID
	}
	if r.ToolName != nil {
		m.ToolName = *r.ToolName
	}
	return m
}

// MessagePage is one page of a thread's messages, oldest first.
type MessagePage struct {
	Messages  []Message
	NextAfter int64
}

// ListMessages pages a thread's log by sequence number.
func (s *Service) ListMessages(ctx context.Context, a tenants.Access, threadID uuid.UUID, after int64, limit int) (MessagePage, error) {
	if _, err := s.GetThread(ctx, a, threadID); err != nil {
		return MessagePage{}, err
	}
	lim := pageLimit(tenants.Page{Limit: limit})
	rows, err := agentdb.New(s.pool).ThreadMessages(ctx, agentdb.ThreadMessagesParams{TenantID: a.Tenant.ID, ThreadID: threadID, After: after, Lim: lim})
	if err != nil {
		return MessagePage{}, fmt.Errorf("list messages: %w", err)
	}
	out := MessagePage{Messages: make([]Message, len(rows))}
	for i, r := range rows {
		out.Messages[i] = messageFromRow(r)
	}
	if n := len(rows); n == int(lim) {
		out.NextAfter = rows[n-1].Seq
	}
	return out, nil
}

// ThreadUsage sums the usage ledger over a thread's runs.
func (s *Service) ThreadUsage(ctx context.Context, a tenants.Access, id uuid.UUID) (usage.Totals, error) {
	if _, err := s.GetThread(ctx, a, id); err != nil {
		return usage.Totals{}, err
	}
	return usage.ThreadTotals(ctx, s.pool, a.Tenant.ID, id)
}
