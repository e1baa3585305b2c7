package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// UsageOut totals a run's tokens.
type UsageOut struct {
	InputTokens  int64 `json:"input_tokens" doc:"Prompt tokens over all model calls."`
	OutputTokens int64 `json:"output_tokens" doc:"Completion tokens over all model calls."`
	TotalTokens  int64 `json:"total_tokens" doc:"Sum reported by the model endpoint."`
}

// RunOut is a run on the wire.
type RunOut struct {
	ID         string              `json:"id" format:"uuid" doc:"Run id."`
	ThreadID   string              `json:"thread_id" format:"uuid" doc:"The thread it runs on."`
	Agent      string              `json:"agent" doc:"The agent's name."`
	Status     string              `json:"status" enum:"queued,running,succeeded,failed,cancelled,timed_out" doc:"Lifecycle state."`
	StopReason string              `json:"stop_reason,omitempty" enum:"end_turn,max_turns,token_budget,quota_exceeded,subagent_limit,model_length,cancelled" doc:"Why the loop stopped."`
	Error      string              `json:"error,omitempty" doc:"What went wrong, for failed runs."`
	Input      string              `json:"input" doc:"The user input."`
	Metadata   json.RawMessage     `json:"metadata" doc:"Caller metadata, stored as given."`
	Turns      int                 `json:"turns" doc:"Model calls made."`
	Usage      UsageOut            `json:"usage" doc:"Tokens used."`
	CreatedAt  time.Time           `json:"created_at" doc:"When it was created."`
	StartedAt  *time.Time          `json:"started_at,omitempty" doc:"When a worker first took it."`
	FinishedAt *time.Time          `json:"finished_at,omitempty" doc:"When it ended."`
	Delivery   *DeliveryReceiptOut `json:"delivery,omitempty" doc:"The delivery receipt (run-get only); absent until the run settles, just before it ends."`
	WebhookURL string              `json:"webhook_url,omitempty" doc:"Where the run's result is POSTed when it ends (see run-create)."`
}

func runOut(r agent.Run) RunOut {
	return RunOut{
		ID: r.ID.String(), ThreadID: r.ThreadID.String(), Agent: r.AgentName, Status: r.Status, StopReason: r.StopReason,
		Error: r.Error, Input: r.Input, Metadata: r.Metadata, Turns: r.Turns,
		Usage:     UsageOut{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, TotalTokens: r.TotalTokens},
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, WebhookURL: r.WebhookURL,
	}
}

// RunPath names a run.
type RunPath struct {
	TenantPath
	Run string `path:"run" format:"uuid" doc:"Run id."`
}

type runCreateIn struct {
	ThreadPath
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" doc:"Retries with the same key and body return the same run; another body answers 409."`
	Body           struct {
		Agent    string            `json:"agent,omitempty" maxLength:"63" doc:"Agent name; default when absent." example:"default"`
		Input    string            `json:"input" doc:"The user's message." example:"Summarize the attached report."`
		Secrets  map[string]string `json:"secrets,omitempty" writeOnly:"true" doc:"Request-scoped secret values for this run only; never stored or returned."`
		Metadata map[string]any    `json:"metadata,omitempty" doc:"Caller metadata, returned as given."`
		Webhook  string            `json:"webhook_url,omitempty" maxLength:"2048" doc:"Receives the run's result when it ends, instead of the agent's webhook_url: a signed POST retried with backoff (see delivery-list). https, or http to localhost only; no credentials." example:"https://example.com/hooks/agentplane"`
	}
}

type runOutBody struct {
	Status int
	Body   RunOut
}

type runListIn struct {
	TenantPath
	PageQuery
	Status string `query:"status" enum:"queued,running,succeeded,failed,cancelled,timed_out" doc:"Only runs in this status."`
	Thread string `query:"thread_id" format:"uuid" doc:"Only runs of this thread."`
}

type runListOut struct {
	Body struct {
		Runs       []RunOut `json:"runs" doc:"Newest first."`
		NextCursor string   `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

func (s *Server) registerRuns(api huma.API) {
	create := op("run-create", http.MethodPost, "/v1/tenants/{tenant}/threads/{thread}/runs", "Start a run", policy.RunWrite, "Runs")
	create.DefaultStatus = http.StatusAccepted
	// Large enough for an input at its limit; the service answers 413 above it.
	create.MaxBodyBytes = 1 << 20
	huma.Register(api, create, func(ctx context.Context, in *runCreateIn) (*runOutBody, error) {
		r, _, err := s.deps.Agents.CreateRun(ctx, accessFrom(ctx), uuid.MustParse(in.Thread), agent.CreateRunInput{
			Agent: in.Body.Agent, Input: in.Body.Input, Metadata: in.Body.Metadata,
			Secrets: in.Body.Secrets, IdempotencyKey: in.IdempotencyKey, WebhookURL: in.Body.Webhook,
		})
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &runOutBody{Status: http.StatusAccepted, Body: runOut(r)}, nil
	})

	huma.Register(api, op("run-list", http.MethodGet, "/v1/tenants/{tenant}/runs", "List runs", policy.RunRead, "Runs"),
		func(ctx context.Context, in *runListIn) (*runListOut, error) {
			f := agent.RunFilter{Status: in.Status}
			if in.Thread != "" {
				id := uuid.MustParse(in.Thread)
				f.ThreadID = &id
			}
			page, err := s.deps.Agents.ListRuns(ctx, accessFrom(ctx), f, in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &runListOut{}
			out.Body.Runs = make([]RunOut, len(page.Runs))
			for i, r := range page.Runs {
				out.Body.Runs[i] = runOut(r)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	huma.Register(api, op("run-get", http.MethodGet, "/v1/tenants/{tenant}/runs/{run}", "Get a run", policy.RunRead, "Runs"),
		func(ctx context.Context, in *RunPath) (*runOutBody, error) {
			r, err := s.deps.Agents.GetRun(ctx, accessFrom(ctx), uuid.MustParse(in.Run))
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			rc, err := s.deps.Agents.Receipt(ctx, accessFrom(ctx), r.ID)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := runOut(r)
			out.Delivery = deliveryReceiptOut(rc)
			return &runOutBody{Status: http.StatusOK, Body: out}, nil
		})

	huma.Register(api, op("run-cancel", http.MethodPost, "/v1/tenants/{tenant}/runs/{run}/cancel", "Cancel a run (idempotent)", policy.RunWrite, "Runs"),
		func(ctx context.Context, in *RunPath) (*runOutBody, error) {
			r, err := s.deps.Agents.CancelRun(ctx, accessFrom(ctx), uuid.MustParse(in.Run))
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return &runOutBody{Status: http.StatusOK, Body: runOut(r)}, nil
		})

	s.registerRunEvents(api)
	s.registerDeliveries(api)
}
