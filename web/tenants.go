package web

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// maxTenantName matches the API's limit on a tenant's display name.
const maxTenantName = 100

func (c *Console) tenantsPage(w http.ResponseWriter, r *http.Request) {
	c.showTenants(w, r, http.StatusOK, ui.TenantsView{})
}

// showTenants renders the platform admin's tenant list around what the
// create form left in v.
func (c *Console) showTenants(w http.ResponseWriter, r *http.Request, status int, v ui.TenantsView) {
	ctx := r.Context()
	page, err := c.deps.Tenants.ListTenants(ctx, visitFrom(ctx).principal, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, t := range page.Tenants {
		v.Tenants = append(v.Tenants, ui.TenantRow{Slug: t.Slug, Name: t.Name, Status: string(t.Status), Created: fmtDate(t.CreatedAt)})
	}
	v.NextPage = nextPage(ui.Path("/tenants"), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "Tenants", sectionTenants, ui.TenantsPage(v))
}

func (c *Console) createTenant(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := ui.TenantForm{Slug: strings.TrimSpace(r.PostFormValue("slug")), Name: strings.TrimSpace(r.PostFormValue("name"))}
	if n := utf8.RuneCountInString(form.Name); n == 0 || n > maxTenantName {
		c.showTenants(w, r, http.StatusUnprocessableEntity, ui.TenantsView{Form: form, Notice: invalid("name", fmt.Sprintf("must be 1 to %d characters", maxTenantName))})
		return
	}
	t, err := c.deps.Tenants.CreateTenant(ctx, visitFrom(ctx).principal, tenants.CreateTenantInput{Slug: form.Slug, Name: form.Name})
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showTenants(w, r, status, ui.TenantsView{Form: form, Notice: n})
		return
	}
	c.showTenants(w, r, http.StatusOK, ui.TenantsView{Notice: done(fmt.Sprintf("Created tenant %s.", t.Slug))})
}
