package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
	"github.com/agentplane/agentplane/web/ui"
)

// maxFilterLen matches the API's limit on audit filter values.
const maxFilterLen = 100

// auditPage shows one page of the audit log. Filters are GET parameters,
// so a filtered view (and each next page) is a plain link.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	q := r.URL.Query()
	v := ui.AuditView{
		Tenant: a.Tenant.Slug,
		Filter: ui.AuditFilter{
			Action:     strings.TrimSpace(q.Get("action")),
			Actor:      strings.TrimSpace(q.Get("actor")),
			TargetKind: strings.TrimSpace(q.Get("target_kind")),
		},
	}
	show := func(status int) { c.render(w, r, status, "Audit log", sectionAudit, ui.AuditPage(v)) }
	for _, s := range []string{v.Filter.Action, v.Filter.Actor, v.Filter.TargetKind} {
		if len(s) > maxFilterLen {
			v.Notice = invalid("filter", "values are at most 100 characters")
			show(http.StatusUnprocessableEntity)
			return
		}
	}
	page, err := c.deps.Tenants.AuditEvents(ctx, a, auditFilter(v.Filter, q.Get("cursor")))
	if err != nil {
		var status int
		status, v.Notice = c.describe(ctx, err)
		show(status)
		return
	}
	names := c.actorNames(ctx, a)
	for _, e := range page.Events {
		v.Entries = append(v.Entries, auditRow(e, names))
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionAudit), q, page.NextCursor)
	show(http.StatusOK)
}

// auditFilter mirrors the API: an action ending in * is a prefix.
func auditFilter(f ui.AuditFilter, cursor string) audit.Filter {
	out := audit.Filter{Limit: listLimit, Cursor: cursor, ActorID: f.Actor, TargetKind: f.TargetKind}
	if prefix, ok := strings.CutSuffix(f.Action, "*"); ok {
		out.ActionPrefix = prefix
	} else {
		out.Action = f.Action
	}
	return out
}

func auditRow(e audit.Entry, names map[string]string) ui.AuditRow {
	actor := names[e.ActorID]
	if actor == "" {
		actor = string(e.ActorKind) + ":" + e.ActorID
	}
	diff := string(e.Diff)
	if diff == "{}" || diff == "null" {
		diff = ""
	}
	return ui.AuditRow{
		Seq: strconv.FormatInt(e.Seq, 10), Time: fmtTime(e.CreatedAt),
		Actor: actor, ActorID: e.ActorID, Action: e.Action,
		Target: e.TargetKind + " " + e.TargetID, Diff: diff,
	}
}

// actorNames maps the ids of the tenant's members and keys (first pages
// only) to readable names, so the log says who rather than which UUID. It
// reads only what the viewer may read anyway; a failure just leaves ids.
func (c *Console) actorNames(ctx context.Context, a tenants.Access) map[string]string {
	names := map[string]string{"system": "system"}
	if c.can(ctx, policy.MemberRead) {
		if page, err := c.deps.Tenants.ListMembers(ctx, a, tenants.Page{Limit: 200}); err == nil {
			for _, m := range page.Members {
				names[m.UserID.String()] = m.Email
			}
		}
	}
	if c.can(ctx, policy.APIKeyRead) {
		if page, err := c.deps.Tenants.ListAPIKeys(ctx, a, tenants.Page{Limit: 200}); err == nil {
			for _, k := range page.Keys {
				names[k.ID.String()] = "key “" + k.Name + "”"
			}
		}
	}
	return names
}
