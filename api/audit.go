package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit"
)

// AuditEventOut is one audit log entry on the wire.
type AuditEventOut struct {
	ID         string          `json:"id" format:"uuid" doc:"Event id."`
	Seq        int64           `json:"seq" doc:"Position in the tenant's hash chain."`
	ActorKind  string          `json:"actor_kind" doc:"Kind of principal that acted." example:"api_key"`
	ActorID    string          `json:"actor_id" doc:"Id of the principal that acted."`
	Action     string          `json:"action" doc:"What was done." example:"member.create"`
	TargetKind string          `json:"target_kind" doc:"Kind of thing acted on." example:"member"`
	TargetID   string          `json:"target_id" doc:"Id of the thing acted on."`
	RequestID  string          `json:"request_id,omitempty" doc:"The API request that caused it."`
	Diff       json.RawMessage `json:"diff" doc:"What changed; secret values are never included."`
	CreatedAt  time.Time       `json:"created_at" doc:"When it happened."`
	Hash       string          `json:"hash" doc:"SHA-256 chain hash (hex) over the previous hash and this event."`
}

type auditListIn struct {
	TenantPath
	PageQuery
	Action     string    `query:"action" maxLength:"100" doc:"Exact action, e.g. member.create; end with * for a prefix (member.*)."`
	ActorID    string    `query:"actor_id" maxLength:"100" doc:"Only events by this principal id."`
	TargetKind string    `query:"target_kind" maxLength:"100" doc:"Only events on this kind of target."`
	TargetID   string    `query:"target_id" maxLength:"100" doc:"Only events on this target id."`
	Since      time.Time `query:"since" doc:"Only events at or after this time (RFC 3339)."`
	Until      time.Time `query:"until" doc:"Only events before this time (RFC 3339)."`
}

type auditListOut struct {
	Body struct {
		Events     []AuditEventOut `json:"events" doc:"Newest first."`
		NextCursor string          `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

func (in auditListIn) filter() audit.Filter {
	f := audit.Filter{
		Limit: in.Limit, Cursor: in.Cursor, ActorID: in.ActorID,
		TargetKind: in.TargetKind, TargetID: in.TargetID, Since: in.Since, Until: in.Until,
	}
	if n := len(in.Action); n > 0 && in.Action[n-1] == '*' {
		f.ActionPrefix = in.Action[:n-1]
	} else {
		f.Action = in.Action
	}
	return f
}

func (s *Server) registerAudit(api huma.API) {
	huma.Register(api, op("audit-event-list", http.MethodGet, "/v1/tenants/{tenant}/audit-events", "List audit events", policy.AuditRead, "Audit"),
		func(ctx context.Context, in *auditListIn) (*auditListOut, error) {
			page, err := s.deps.Tenants.AuditEvents(ctx, accessFrom(ctx), in.filter())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &auditListOut{}
			out.Body.Events = make([]AuditEventOut, len(page.Events))
			for i, e := range page.Events {
				out.Body.Events[i] = AuditEventOut{
					ID: e.ID.String(), Seq: e.Seq, ActorKind: string(e.ActorKind), ActorID: e.ActorID,
					Action: e.Action, TargetKind: e.TargetKind, TargetID: e.TargetID, RequestID: e.RequestID,
					Diff: e.Diff, CreatedAt: e.CreatedAt, Hash: e.Hash,
				}
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})
}
