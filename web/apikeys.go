package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// maxKeyName matches the API's limit on a key's name.
const maxKeyName = 100

func (c *Console) apiKeysPage(w http.ResponseWriter, r *http.Request) {
	c.showAPIKeys(w, r, http.StatusOK, ui.APIKeysView{})
}

// showAPIKeys renders the keys page around what a form left in v: its
// notice, the kept form values, or the one-time display of a new key.
func (c *Console) showAPIKeys(w http.ResponseWriter, r *http.Request, status int, v ui.APIKeysView) {
	ctx := r.Context()
	a := visitFrom(ctx).access
	page, err := c.deps.Tenants.ListAPIKeys(ctx, a, tenants.Page{Limit: listLimit, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	v.Tenant = a.Tenant.Slug
	v.CanWrite = c.can(ctx, policy.APIKeyWrite)
	v.Roles = grantable(a)
	if v.Form.Role == "" {
		v.Form.Role = string(policy.RoleViewer)
	}
	now := time.Now()
	for _, k := range page.Keys {
		row := ui.APIKeyRow{
			ID: k.ID.String(), Name: k.Name, Role: string(k.Role), Prefix: "ap_" + k.Prefix + "_…",
			Created: fmtTime(k.CreatedAt), LastUsed: fmtOptTime(k.LastUsedAt, "never"),
			Expires: fmtOptTime(k.ExpiresAt, "never"), Status: keyStatus(k, now),
		}
		row.Revocable = v.CanWrite && row.Status != "revoked"
		v.Keys = append(v.Keys, row)
	}
	v.NextPage = nextPage(ui.TenantPath(v.Tenant, sectionAPIKeys), r.URL.Query(), page.NextCursor)
	c.render(w, r, status, "API keys", sectionAPIKeys, ui.APIKeysPage(v))
}

func keyStatus(k tenants.APIKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !k.ExpiresAt.After(now):
		return "expired"
	}
	return "active"
}

// createAPIKey issues a key and shows its secret in this one response; the
// secret is not kept anywhere the console could show it again.
func (c *Console) createAPIKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := ui.KeyForm{
		Name: strings.TrimSpace(r.PostFormValue("name")), Role: r.PostFormValue("role"),
		Expires: strings.TrimSpace(r.PostFormValue("expires")),
	}
	in, notice := parseKeyForm(form)
	if !notice.IsZero() {
		c.showAPIKeys(w, r, http.StatusUnprocessableEntity, ui.APIKeysView{Form: form, Notice: notice})
		return
	}
	key, err := c.deps.Tenants.CreateAPIKey(ctx, visitFrom(ctx).access, in)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showAPIKeys(w, r, status, ui.APIKeysView{Form: form, Notice: n})
		return
	}
	c.showAPIKeys(w, r, http.StatusOK, ui.APIKeysView{NewKey: &ui.NewKey{Name: key.Name, Key: key.Key}})
}

// parseKeyForm validates what the API's schema would. An expiry date is the
// day the key stops working, at 00:00 UTC, which is how the list shows it.
func parseKeyForm(f ui.KeyForm) (tenants.CreateAPIKeyInput, ui.Notice) {
	if n := utf8.RuneCountInString(f.Name); n == 0 || n > maxKeyName {
		return tenants.CreateAPIKeyInput{}, invalid("name", fmt.Sprintf("must be 1 to %d characters", maxKeyName))
	}
	role, err := policy.ParseRole(f.Role)
	if err != nil {
		return tenants.CreateAPIKeyInput{}, invalid("role", "choose one of the listed roles")
	}
	in := tenants.CreateAPIKeyInput{Name: f.Name, Role: role}
	if f.Expires != "" {
		day, err := time.Parse(time.DateOnly, f.Expires)
		if err != nil {
			return tenants.CreateAPIKeyInput{}, invalid("expires", "must be a date (YYYY-MM-DD)")
		}
		in.ExpiresAt = &day
	}
	return in, ui.Notice{}
}

func (c *Console) revokeAPIKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, ok := c.pathID(w, r, "key")
	if !ok {
		return
	}
	k, err := c.deps.Tenants.RevokeAPIKey(ctx, visitFrom(ctx).access, id)
	if err != nil {
		status, n := c.describe(ctx, err)
		c.showAPIKeys(w, r, status, ui.APIKeysView{Notice: n})
		return
	}
	c.showAPIKeys(w, r, http.StatusOK, ui.APIKeysView{Notice: done(fmt.Sprintf("Revoked the key “%s”.", k.Name))})
}
