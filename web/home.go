package web

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// landing is where a user starts: the tenants page for a platform admin,
// otherwise the members page of the user's first tenant, or "" when the
// user belongs to none.
func (c *Console) landing(ctx context.Context, p policy.Principal) string {
	if c.allowedFor(ctx, p, "", policy.DomainPlatform, policy.TenantCreate) {
		return ui.Path("/tenants")
	}
	page, err := c.deps.Tenants.ListTenants(ctx, p, tenants.Page{Limit: 1})
	if err != nil {
		c.log.ErrorContext(ctx, "console landing", slog.String("error", err.Error()))
		return ""
	}
	if len(page.Tenants) == 0 {
		return ""
	}
	return ui.TenantPath(page.Tenants[0].Slug, sectionMembers)
}

// home sends the user to their landing page, or explains that there is
// none yet.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	v := visitFrom(r.Context())
	if target := c.landing(r.Context(), v.principal); target != "" {
		redirect(w, r, target)
		return
	}
	c.render(w, r, http.StatusOK, "Welcome", sectionNone, ui.HomePage(ui.HomeView{Email: v.session.User.Email}))
}

// switchTenant serves the tenant switcher. It does not check access: the
// page it leads to does, and answers 404 for a tenant the user cannot see.
func (c *Console) switchTenant(w http.ResponseWriter, r *http.Request) {
	slug := r.URL.Query().Get("tenant")
	if !slugRE.MatchString(slug) {
		c.notFound(w, r)
		return
	}
	redirect(w, r, ui.TenantPath(slug, sectionMembers))
}

// tenantHome opens a tenant on its members page.
func (c *Console) tenantHome(w http.ResponseWriter, r *http.Request) {
	redirect(w, r, ui.TenantPath(visitFrom(r.Context()).access.Tenant.Slug, sectionMembers))
}
