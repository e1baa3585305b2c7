package web_test

import (
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
	"github.com/agentplane/agentplane/web"
)

// newSecretsFixture is newFixture with a secrets vault in the console.
func newSecretsFixture(t *testing.T) (*fixture, *secrets.Vault) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool := pgtest.Pool(t)
	svc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	vault, err := secrets.NewVault(pool, key, logger)
	require.NoError(t, err)
	return serveConsole(t, web.Deps{Tenants: svc, Secrets: vault}), vault
}

func TestSecretsPage(t *testing.T) {
	t.Parallel()
	f, vault := newSecretsFixture(t)
	tn := f.tenant(t, "secrets")
	c, target := f.login(t, f.member(t, tn, "admin", policy.RoleAdmin))
	page := "/console/t/" + tn.Slug + "/secrets"
	value, rotated := "sk-"+randomHex(12), "sk-"+randomHex(12)

	_, doc := c.get(target)
	require.Equal(t, page, doc.Find(testID("nav-secrets")).AttrOr("href", ""))
	res, doc := c.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "password", doc.Find(testID("secret-value")).AttrOr("type", ""))
	_, prefilled := doc.Find(testID("secret-value")).Attr("value")
	require.False(t, prefilled, "the value field is never prefilled")

	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"OPENAI_API_KEY"}, "value": {value}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	row := doc.Find(testID("secret-row") + `[data-name="OPENAI_API_KEY"]`)
	require.Equal(t, "1", row.Find(testID("secret-version")).Text())
	fp1 := row.Find(testID("secret-fingerprint")).Text()
	require.Regexp(t, `^sha256:[0-9a-f]{12}$`, fp1)
	html, _ := doc.Html()
	require.NotContains(t, html, value)

	// Rotate through the row's form.
	require.Equal(t, 1, row.Find(testID("secret-rotate-form")).Length())
	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"OPENAI_API_KEY"}, "value": {rotated}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	row = doc.Find(testID("secret-row") + `[data-name="OPENAI_API_KEY"]`)
	require.Equal(t, "2", row.Find(testID("secret-version")).Text())
	require.NotEqual(t, fp1, row.Find(testID("secret-fingerprint")).Text())
	got, err := vault.Reveal(t.Context(), tn.ID, "OPENAI_API_KEY")
	require.NoError(t, err)
	require.Equal(t, rotated, got)

	// A failed form keeps the name, never the value.
	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"BAD-NAME"}, "value": {value}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_name", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Equal(t, "BAD-NAME", doc.Find(testID("secret-name")).AttrOr("value", ""))
	html, _ = doc.Html()
	require.NotContains(t, html, value)
	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"EMPTY"}, "value": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Equal(t, "invalid_value", doc.Find(testID("form-error")).AttrOr("data-code", ""))

	// Delete through htmx's DELETE, with a confirmation prompt.
	del := doc.Find(testID("secret-row") + `[data-name="OPENAI_API_KEY"] form[hx-delete]`)
	require.NotEmpty(t, del.AttrOr("hx-confirm", ""))
	res, doc = c.htmx(http.MethodDelete, del.AttrOr("hx-delete", ""), nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("secret-row")).Length())
	_, err = vault.Reveal(t.Context(), tn.ID, "OPENAI_API_KEY")
	require.ErrorIs(t, err, tenants.ErrNotFound)

	// Without JavaScript: the plain form posts and the delete fallback.
	c.get(page)
	res, _ = c.send(http.MethodPost, page, url.Values{"name": {"PLAIN"}, "value": {value}, "csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, doc = c.send(http.MethodPost, page+"/PLAIN/delete", url.Values{"csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("secret-row")).Length())
	res, doc = c.htmx(http.MethodDelete, page+"/PLAIN", nil)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Equal(t, "not_found", doc.Find(testID("form-error")).AttrOr("data-code", ""))
}

func TestSecretsPagePermissions(t *testing.T) {
	t.Parallel()
	f, vault := newSecretsFixture(t)
	tn := f.tenant(t, "secrets-perm")
	_, err := vault.Put(t.Context(), systemAccess(tn), "EXISTING", "v")
	require.NoError(t, err)
	page := "/console/t/" + tn.Slug + "/secrets"

	// A viewer has no secret:read: no nav entry, 403.
	viewer, target := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	_, doc := viewer.get(target)
	require.Zero(t, doc.Find(testID("nav-secrets")).Length())
	res, _ := viewer.get(page)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// A developer sees metadata but no forms, and cannot change anything.
	dev, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	res, doc = dev.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("secret-row")).Length())
	require.Zero(t, doc.Find(testID("secret-form")).Length())
	require.Zero(t, doc.Find(testID("secret-delete")).Length())
	res, _ = dev.htmx(http.MethodPost, page, url.Values{"name": {"EXISTING"}, "value": {"sneaky"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = dev.htmx(http.MethodDelete, page+"/EXISTING", nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	got, err := vault.Reveal(t.Context(), tn.ID, "EXISTING")
	require.NoError(t, err)
	require.Equal(t, "v", got)

	// Another tenant's owner gets the not-found page.
	other := f.tenant(t, "secrets-other")
	owner, _ := f.login(t, f.member(t, other, "owner", policy.RoleOwner))
	res, _ = owner.get(page)
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

// Without a vault the console has no secrets page at all.
func TestSecretsPageAbsentWithoutVault(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "no-vault")
	c, target := f.login(t, f.member(t, tn, "owner", policy.RoleOwner))
	_, doc := c.get(target)
	require.Zero(t, doc.Find(testID("nav-secrets")).Length())
	res, _ := c.get("/console/t/" + tn.Slug + "/secrets")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.False(t, strings.Contains(target, "secrets"))
}
