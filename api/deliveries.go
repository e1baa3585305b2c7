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

// webhookDoc explains how run results are delivered.
const webhookDoc = "A run with a webhook_url (its own, else its agent's) has its result POSTed there when it ends, " +
	"as JSON {delivery_id, event: \"run.completed\", run, final_message}, with headers X-Agentplane-Delivery " +
	"(the delivery id, the same on every retry), X-Agentplane-Timestamp (unix seconds) and X-Agentplane-Signature " +
	"(`v1=` + hex HMAC-SHA256 of `<timestamp>.<body>` keyed by the tenant's secret WEBHOOK_SIGNING_SECRET; set it " +
	"with secret-put to verify). Any answer but a 2xx is retried with exponential backoff; redirects are not followed."

// WebhookAttemptOut is one POST of a webhook delivery.
type WebhookAttemptOut struct {
	Attempt    int       `json:"attempt" doc:"1 for the first POST." example:"1"`
	StatusCode *int      `json:"status_code,omitempty" doc:"The receiver's HTTP status; absent when no answer came." example:"200"`
	Error      string    `json:"error,omitempty" doc:"Why the attempt failed."`
	DurationMS int64     `json:"duration_ms" doc:"How long the POST took." example:"84"`
	CreatedAt  time.Time `json:"created_at" doc:"When the attempt ended."`
}

// WebhookDeliveryOut is a webhook delivery of a run's result.
type WebhookDeliveryOut struct {
	ID             string              `json:"id" format:"uuid" doc:"Delivery id: the X-Agentplane-Delivery header of every attempt, for receivers to deduplicate."`
	RunID          string              `json:"run_id" format:"uuid" doc:"The run whose result is delivered."`
	URL            string              `json:"url" doc:"Where it is POSTed." example:"https://example.com/hooks/agentplane"`
	Status         string              `json:"status" enum:"pending,delivered,failed" doc:"pending until a 2xx answer (delivered) or the last attempt (failed)."`
	LastStatusCode *int                `json:"last_status_code,omitempty" doc:"The last attempt's HTTP status." example:"200"`
	LastError      string              `json:"last_error,omitempty" doc:"The last attempt's error."`
	CreatedAt      time.Time           `json:"created_at" doc:"When the run ended and the delivery was queued."`
	DeliveredAt    *time.Time          `json:"delivered_at,omitempty" doc:"When a receiver accepted it."`
	Attempts       []WebhookAttemptOut `json:"attempts" nullable:"false" doc:"Every POST so far, oldest first."`
}

func webhookDeliveryOut(d agent.Delivery) WebhookDeliveryOut {
	out := WebhookDeliveryOut{
		ID: d.ID.String(), RunID: d.RunID.String(), URL: d.URL, Status: d.Status, LastStatusCode: d.LastStatusCode,
		LastError: d.LastError, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt,
		Attempts: make([]WebhookAttemptOut, len(d.Attempts)),
	}
	for i, a := range d.Attempts {
		out.Attempts[i] = WebhookAttemptOut{
			Attempt: a.Attempt, StatusCode: a.StatusCode, Error: a.Error,
			DurationMS: a.Duration.Milliseconds(), CreatedAt: a.CreatedAt,
		}
	}
	return out
}

type deliveryListOut struct {
	Body struct {
		Deliveries []WebhookDeliveryOut `json:"deliveries" nullable:"false" doc:"The run's webhook deliveries, oldest first; empty for a run without a webhook or not ended yet."`
	}
}

func (s *Server) registerDeliveries(api huma.API) {
	list := op("delivery-list", http.MethodGet, "/v1/tenants/{tenant}/runs/{run}/deliveries", "List a run's webhook deliveries", policy.RunRead, "Runs")
	list.Description += " Each delivery lists its attempts with the receiver's status codes and errors. " + webhookDoc
	huma.Register(api, list, func(ctx context.Context, in *RunPath) (*deliveryListOut, error) {
		ds, err := s.deps.Agents.ListDeliveries(ctx, accessFrom(ctx), uuid.MustParse(in.Run))
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		out := &deliveryListOut{}
		out.Body.Deliveries = make([]WebhookDeliveryOut, len(ds))
		for i, d := range ds {
			out.Body.Deliveries[i] = webhookDeliveryOut(d)
		}
		return out, nil
	})
}
