package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/a-h/templ"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
	"github.com/agentplane/agentplane/web/ui"
)

// Sections name the navigation entry a page belongs to.
const (
	sectionNone    = ""
	sectionMembers = "members"
	sectionAPIKeys = "api-keys"
	sectionAudit   = "audit"
	sectionTenants = "tenants"
)

// isHTMX reports whether the request wants a fragment: htmx sets HX-Request,
// except that a history restore needs the whole page again.
func isHTMX(r *http.Request) bool {
	return r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-History-Restore-Request") != "true"
}

// render is the one way a page is written: the whole document, or for an
// htmx request only the body, which htmx swaps into #content. It renders
// into a buffer first so a template failure is a clean 500, not half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, title, section string, body templ.Component) {
	ctx := r.Context()
	comp := body
	if !isHTMX(r) {
		comp = ui.Layout(ui.Page{Title: title, Chrome: c.chrome(ctx, section), Assets: c.static.assets(), Body: body})
	}
	var buf bytes.Buffer
	if err := comp.Render(ctx, &buf); err != nil {
		c.log.ErrorContext(ctx, "console render", slog.String("page", title), slog.String("error", err.Error()))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// chrome builds the header of a logged-in page; nil before login. The
// tenant switcher lists what ListTenants shows the user (every tenant for a
// platform admin); a failure only empties the switcher.
func (c *Console) chrome(ctx context.Context, section string) *ui.Chrome {
	v := visitFrom(ctx)
	if v == nil {
		return nil
	}
	ch := &ui.Chrome{Email: v.session.User.Email, Tenant: v.access.Tenant.Slug}
	page, err := c.deps.Tenants.ListTenants(ctx, v.principal, tenants.Page{Limit: 200})
	if err != nil {
		c.log.ErrorContext(ctx, "console tenant switcher", slog.String("error", err.Error()))
	}
	for _, t := range page.Tenants {
		ch.Tenants = append(ch.Tenants, ui.TenantOption{Slug: t.Slug, Name: t.Name, Current: t.Slug == ch.Tenant})
	}
	if slug := ch.Tenant; slug != "" {
		type navEntry struct {
			label, section string
			perm           policy.Permission
		}
		entries := []navEntry{
			{"Members", sectionMembers, policy.MemberRead},
			{"API keys", sectionAPIKeys, policy.APIKeyRead},
			{"Audit log", sectionAudit, policy.AuditRead},
		}
		if c.deps.Agents != nil {
			entries = append(entries, navEntry{"Models", sectionModels, policy.ModelRead}, navEntry{"Agents", sectionAgents, policy.AgentRead})
			entries = append(entries, navEntry{"Threads", sectionThreads, policy.ThreadRead}, navEntry{"Runs", sectionRuns, policy.RunRead})
		}
		if c.deps.Secrets != nil {
			entries = append(entries, navEntry{"Secrets", sectionSecrets, policy.SecretRead})
		}
		for _, n := range entries {
			if c.can(ctx, n.perm) {
				ch.Nav = append(ch.Nav, ui.NavLink{Label: n.label, Href: ui.TenantPath(slug, n.section), TestID: "nav-" + n.section, Active: section == n.section})
			}
		}
	}
	if c.canPlatform(ctx, policy.TenantCreate) {
		ch.Nav = append(ch.Nav, ui.NavLink{Label: "Tenants", Href: ui.Path("/tenants"), TestID: "nav-tenants", Active: section == sectionTenants})
	}
	return ch
}

// errorPage renders a full-page refusal or failure.
func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	c.render(w, r, status, title, sectionNone, ui.ErrorPage(ui.ErrorView{Status: status, Title: title, Message: msg}))
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.errorPage(w, r, http.StatusNotFound, "Not found", "There is nothing here, or you have no access to it.")
}

// fail renders the error page for a domain error.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, n := c.describe(r.Context(), err)
	if status == http.StatusNotFound {
		c.notFound(w, r)
		return
	}
	c.errorPage(w, r, status, http.StatusText(status), n.Text)
}

// describe is the console's one table from domain errors to a status and a
// message fit for a user; it mirrors api/errors.go. Unknown errors are
// logged and shown as a generic failure, never verbatim.
func (c *Console) describe(ctx context.Context, err error) (int, ui.Notice) {
	var (
		nf  *tenants.NotFoundError
		cf  *tenants.ConflictError
		fb  *tenants.ForbiddenError
		inv *tenants.InvalidError
		ae  *tenants.AuthError
	)
	switch {
	case errors.As(err, &nf):
		return http.StatusNotFound, ui.Notice{Error: true, Code: "not_found", Text: "It no longer exists."}
	case errors.As(err, &cf):
		return http.StatusConflict, ui.Notice{Error: true, Code: cf.Code, Text: cf.Message}
	case errors.As(err, &fb):
		return http.StatusForbidden, ui.Notice{Error: true, Code: fb.Code, Text: fb.Message}
	case errors.As(err, &inv):
		return http.StatusUnprocessableEntity, ui.Notice{Error: true, Code: "invalid_" + inv.Field, Text: inv.Field + ": " + inv.Message}
	case errors.Is(err, tenants.ErrTenantSuspended):
		return http.StatusForbidden, ui.Notice{Error: true, Code: "tenant_suspended", Text: "This tenant is suspended."}
	case errors.Is(err, tenants.ErrInvalidCursor), errors.Is(err, audit.ErrInvalidCursor):
		return http.StatusUnprocessableEntity, ui.Notice{Error: true, Code: "invalid_cursor", Text: "That page link is not valid; start from the first page."}
	case errors.As(err, &ae):
		return http.StatusUnauthorized, ui.Notice{Error: true, Code: ae.Code, Text: ae.Message}
	}
	c.log.ErrorContext(ctx, "console internal error", slog.String("error", err.Error()))
	return http.StatusInternalServerError, ui.Notice{Error: true, Code: "internal", Text: "Something went wrong. Try again later."}
}

// invalid is the notice for a form field the handler itself rejected.
func invalid(field, msg string) ui.Notice {
	return ui.Notice{Error: true, Code: "invalid_" + field, Text: field + ": " + msg}
}

// done is the notice after a successful change.
func done(text string) ui.Notice { return ui.Notice{Text: text} }
