package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
	"github.com/agentplane/agentplane/web/ui"
)

const sectionSecrets = "secrets"

// secretNameHTML is secrets.NamePattern for an input's pattern attribute,
// which anchors by itself.
var secretNameHTML = strings.TrimSuffix(strings.TrimPrefix(secrets.NamePattern, "^"), "$")

// secretRoutes adds the secrets page, mirroring the API's secret-list
// (secret:read) and secret-put / secret-delete (secret:write). Values are
// write-only here too: no handler ever puts one in a response.
func (c *Console) secretRoutes(r chi.Router) {
	r.With(c.need(policy.SecretRead)).Get("/secrets", c.secretsPage)
	r.Group(func(r chi.Router) {
		r.Use(c.need(policy.SecretWrite))
		r.Post("/secrets", c.putSecret)
		r.Delete("/secrets/{name}", c.deleteSecret)
		r.Post("/secrets/{name}/delete", c.deleteSecret)
	})
}

func (c *Console) secretsPage(w http.ResponseWriter, r *http.Request) {
	c.showSecrets(w, r, http.StatusOK, ui.SecretsView{})
}

// showSecrets renders the secrets page around a form's outcome in v.
func (c *Console) showSecrets(w http.ResponseWriter, r *http.Request, status int, v ui.SecretsView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	page, err := c.deps.Secrets.List(ctx, a, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant = a.Tenant.Slug
	v.CanWrite = c.can(ctx, policy.SecretWrite)
	v.NamePattern = secretNameHTML
	for _, m := range page.Secrets {
		v.Secrets = append(v.Secrets, ui.SecretRow{
			Name: m.Name, Version: strconv.Itoa(m.Version), Fingerprint: m.Fingerprint, Updated: fmtTime(m.UpdatedAt),
		})
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionSecrets), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "Secrets", sectionSecrets, ui.SecretsPage(v))
}

// putSecret creates a secret or rotates one (a new version of its name).
// A failed form keeps the name, never the value.
func (c *Console) putSecret(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := ui.SecretForm{Name: strings.TrimSpace(r.PostFormValue("name"))}
	value := r.PostFormValue("value")
	if err := secrets.ValidateName(form.Name); err != nil {
		c.showSecrets(w, r, http.StatusUnprocessableEntity, ui.SecretsView{Form: form,
			Notice: invalid("name", "use a letter or underscore, then letters, digits or underscores (at most 128)")})
		return
	}
	if value == "" {
		c.showSecrets(w, r, http.StatusUnprocessableEntity, ui.SecretsView{Form: form, Notice: invalid("value", "must not be empty")})
		return
	}
	m, err := c.deps.Secrets.Put(ctx, visitFrom(ctx).access, form.Name, value)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showSecrets(w, r, status, ui.SecretsView{Form: form, Notice: n})
		return
	}
	c.showSecrets(w, r, http.StatusOK, ui.SecretsView{Notice: done(fmt.Sprintf("Saved %s as version %d.", m.Name, m.Version))})
}

func (c *Console) deleteSecret(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	if err := c.deps.Secrets.Delete(ctx, visitFrom(ctx).access, name); err != nil {
		status, n := c.describe(ctx, err)
		c.showSecrets(w, r, status, ui.SecretsView{Notice: n})
		return
	}
	c.showSecrets(w, r, http.StatusOK, ui.SecretsView{Notice: done(fmt.Sprintf("Deleted %s and all its versions.", name))})
}
