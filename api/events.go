package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// EventOut is one run event.
type EventOut struct {
	Seq       int64           `json:"seq" doc:"Per-run sequence number (the SSE id)."`
	Type      string          `json:"type" doc:"Event type, e.g. message.delta, tool.called, run.completed."`
	Data      json.RawMessage `json:"data" doc:"Type-specific payload."`
	CreatedAt time.Time       `json:"created_at" doc:"When it was stored."`
}

// EventsOut is the JSON form of GET …/runs/{run}/events.
type EventsOut struct {
	Events    []EventOut `json:"events" doc:"Events after the requested sequence number, in order."`
	NextAfter int64      `json:"next_after" doc:"Pass as after= to continue."`
}

type runEventsIn struct {
	RunPath
	After       int64  `query:"after" minimum:"0" doc:"Only events after this sequence number."`
	LastEventID string `header:"Last-Event-ID" doc:"SSE resume point; overrides after."`
	Accept      string `header:"Accept" doc:"text/event-stream for a live stream, else JSON."`
}

// keepalive is how often an idle stream sends a comment and re-reads the
// table (covering a notification lost while reconnecting).
const keepalive = 15 * time.Second

func (s *Server) registerRunEvents(api huma.API) {
	o := op("run-events", http.MethodGet, "/v1/tenants/{tenant}/runs/{run}/events",
		"Read or stream a run's events", policy.RunRead, "Runs")
	o.Description += " With `Accept: text/event-stream` the events stream as Server-Sent Events (`id` = seq, `event` = type) and the stream follows the run live until `run.completed`; `Last-Event-ID` resumes after a disconnect. Otherwise a JSON page of events after `after`."
	schema := api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(EventsOut{}), true, "EventsOut")
	o.Responses = map[string]*huma.Response{"200": {
		Description: "Run events",
		Content: map[string]*huma.MediaType{
			"application/json":  {Schema: schema},
			"text/event-stream": {Schema: &huma.Schema{Type: "string", Description: "SSE frames: id, event, data (JSON)."}},
		},
	}}
	huma.Register(api, o, func(ctx context.Context, in *runEventsIn) (*huma.StreamResponse, error) {
		a := accessFrom(ctx)
		runID := uuid.MustParse(in.Run)
		after := in.After
		if id, err := strconv.ParseInt(in.LastEventID, 10, 64); err == nil && id >= 0 {
			after = id
		}
		evs, err := s.deps.Agents.ListEvents(ctx, a, runID, after, 1000)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		if !strings.Contains(in.Accept, "text/event-stream") {
			return &huma.StreamResponse{Body: func(hc huma.Context) {
				out := EventsOut{Events: make([]EventOut, len(evs)), NextAfter: after}
				for i, e := range evs {
					out.Events[i] = EventOut{Seq: e.Seq, Type: e.Type, Data: e.Data, CreatedAt: e.CreatedAt}
					out.NextAfter = e.Seq
				}
				hc.SetHeader("Content-Type", "application/json")
				_ = json.NewEncoder(hc.BodyWriter()).Encode(out)
			}}, nil
		}
		return &huma.StreamResponse{Body: func(hc huma.Context) {
			s.streamEvents(hc, a.Tenant.ID, runID, after, evs)
		}}, nil
	})
}

// streamEvents writes SSE frames, then follows the run until it completes
// or the client leaves.
func (s *Server) streamEvents(hc huma.Context, tenantID, runID uuid.UUID, after int64, first []agent.Event) {
	ctx := hc.Context()
	hc.SetHeader("Content-Type", "text/event-stream")
	hc.SetHeader("Cache-Control", "no-cache")
	hc.SetHeader("X-Accel-Buffering", "no")
	w := hc.BodyWriter()
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	var wake <-chan struct{}
	if s.deps.Broker != nil {
		ch, unsubscribe := s.deps.Broker.Subscribe(runID)
		defer unsubscribe()
		wake = ch
	}
	tick := time.NewTicker(keepalive)
	defer tick.Stop()
	// Events stored between the first read and the subscription would wait
	// for the next keepalive; read once more now that we are subscribed.
	evs := first
	last := after
	if n := len(first); n > 0 {
		last = first[n-1].Seq
	}
	if more, err := s.deps.Agents.EventsAfter(ctx, tenantID, runID, last); err == nil {
		evs = append(evs, more...)
	}
	for {
		for _, e := range evs {
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, e.Data)
			after = e.Seq
			if e.Type == agent.EventRunCompleted {
				flush()
				return
			}
		}
		flush()
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
			fmt.Fprint(w, ": keepalive\n\n")
		}
		var err error
		if evs, err = s.deps.Agents.EventsAfter(ctx, tenantID, runID, after); err != nil {
			if ctx.Err() == nil {
				s.logger.WarnContext(ctx, "event stream read failed", "run_id", runID, "error", err)
			}
			return
		}
	}
}
