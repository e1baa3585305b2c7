package web

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// runDeliveries is the run page's "Webhook deliveries" section: each
// delivery of the run's result and its attempts, under the page's own
// permission (run:read). A read failure is logged and leaves the section
// out rather than failing the page.
func (c *Console) runDeliveries(ctx context.Context, a tenants.Access, runID uuid.UUID) templ.Component {
	ds, err := c.deps.Agents.ListDeliveries(ctx, a, runID)
	if err != nil {
		if !isNotFound(err) {
			c.log.ErrorContext(ctx, "console run deliveries", slog.String("run_id", runID.String()), slog.String("error", err.Error()))
		}
		return templ.NopComponent
	}
	return ui.RunWebhookDeliveries(deliveryViews(ds))
}

func deliveryViews(ds []agent.Delivery) []ui.WebhookDeliveryView {
	out := make([]ui.WebhookDeliveryView, len(ds))
	for i, d := range ds {
		v := ui.WebhookDeliveryView{
			ID: d.ID.String(), URL: d.URL, Status: d.Status,
			Created: fmtTime(d.CreatedAt), Delivered: fmtOptTime(d.DeliveredAt, "—"),
		}
		for _, at := range d.Attempts {
			code := "—"
			if at.StatusCode != nil {
				code = strconv.Itoa(*at.StatusCode)
			}
			v.Attempts = append(v.Attempts, ui.WebhookAttemptView{
				Attempt: strconv.Itoa(at.Attempt), StatusCode: code, Error: at.Error,
				Duration: at.Duration.Round(time.Millisecond).String(), Time: at.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
			})
		}
		out[i] = v
	}
	return out
}
