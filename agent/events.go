package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants"
)

// Event types (DESIGN §5); their names are part of the API.
const (
	EventRunQueued        = "run.queued"
	EventRunStarted       = "run.started"
	EventMessageDelta     = "message.delta"
	EventMessageCompleted = "message.completed"
	EventToolCalled       = "tool.called"
	EventToolResult       = "tool.result"
	EventToolDenied       = "tool.denied"
	EventUsage            = "usage"
	EventRunCompleted     = "run.completed"
	EventError            = "error"
)

// NotifyChannel is the PostgreSQL channel that carries "tenant:run:seq" for
// every stored event, so every replica's subscribers learn of it. The
// AppendEvent query names it too; keep the two equal.
const NotifyChannel = "agentplane_run_events"

// Event is one stored run event.
type Event struct {
	Seq       int64
	Type      string
	Data      json.RawMessage
	CreatedAt time.Time
}

// appendEvent stores an event under the run's next sequence number and
// notifies listeners in the same statement (delivered at commit when db is
// a transaction). A
// worker passes its lease epoch; a fenced-out worker gets ErrFenced.
func (s *Service) appendEvent(ctx context.Context, db pg.DBTX, tenantID, runID uuid.UUID, epoch *int64, typ string, data any) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s event: %w", typ, err)
	}
	row, err := agentdb.New(db).AppendEvent(ctx, agentdb.AppendEventParams{
		TenantID: tenantID, RunID: runID, Epoch: epoch, Type: typ, Data: raw,
	})
	if err != nil {
		if epoch != nil {
			return Event{}, fenced(err)
		}
		return Event{}, fmt.Errorf("append %s event: %w", typ, err)
	}
	return Event{Seq: row.Seq, Type: typ, Data: raw, CreatedAt: row.CreatedAt}, nil
}

// ListEvents returns up to limit events of a run after sequence number after.
func (s *Service) ListEvents(ctx context.Context, a tenants.Access, runID uuid.UUID, after int64, limit int) ([]Event, error) {
	if _, err := s.GetRun(ctx, a, runID); err != nil {
		return nil, err
	}
	return s.eventsAfter(ctx, a.Tenant.ID, runID, after, limit)
}

func (s *Service) eventsAfter(ctx context.Context, tenantID, runID uuid.UUID, after int64, limit int) ([]Event, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	rows, err := agentdb.New(s.pool).ListEvents(ctx, agentdb.ListEventsParams{TenantID: tenantID, RunID: runID, After: after, Lim: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list events of run %s: %w", runID, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{Seq: r.Seq, Type: r.Type, Data: r.Data, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

func completedData(r Run) map[string]any {
	d := map[string]any{"status": r.Status}
	if r.StopReason != "" {
		d["stop_reason"] = r.StopReason
	}
	if r.Error != "" {
		d["error"] = r.Error
	}
	return d
}
