package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

func TestAPIKeyShownOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "keys-once")
	email := f.member(t, tn, "dev", policy.RoleDeveloper)
	c, _ := f.login(t, email)
	page := "/console/t/" + tn.Slug + "/api-keys"

	res, doc := c.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("create-key-form")).Length())
	// A developer cannot hand out admin or owner keys, so is not offered them.
	roles := doc.Find(testID("key-role") + " option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") })
	require.Equal(t, []string{"developer", "viewer"}, roles)

	res, doc = c.htmx(http.MethodPost, page, url.Values{"name": {"ci"}, "role": {"viewer"}, "expires": {"2999-12-31"}})
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find("html > head title").Length(), "an htmx request gets the fragment, not the document")
	key := doc.Find(testID("new-api-key")).Text()
	require.True(t, strings.HasPrefix(key, "ap_"), "key %q", key)
	row := doc.Find(testID("api-key-row") + `[data-name="ci"]`)
	require.Equal(t, "active", row.Find(testID("api-key-status")).Text())
	require.Contains(t, row.Text(), "2999-12-31 00:00 UTC", "the key stops working on the chosen day")
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))

	p, err := f.svc.AuthenticateKey(t.Context(), key)
	require.NoError(t, err)
	require.Equal(t, policy.RoleViewer, p.Role)

	// Never again: not on the next page load.
	res, doc = c.get(page)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("new-api-key")).Length())
	html, _ := doc.Html()
	require.NotContains(t, html, key[len(key)-40:], "the secret never reappears")
	require.Equal(t, 1, doc.Find(testID("api-key-row")+`[data-name="ci"]`).Length())

	// Revoke through htmx's DELETE.
	id := strings.TrimSuffix(strings.TrimPrefix(
		doc.Find(testID("api-key-row")+`[data-name="ci"] form`).AttrOr("hx-delete", ""), page+"/"), "/")
	require.NotEmpty(t, id)
	res, doc = c.htmx(http.MethodDelete, page+"/"+id, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "revoked", doc.Find(testID("api-key-row")+`[data-name="ci"] `+testID("api-key-status")).Text())
	require.Zero(t, doc.Find(testID("api-key-revoke")).Length())
	_, err = f.svc.AuthenticateKey(t.Context(), key)
	require.Error(t, err)
}

func TestAPIKeyFormErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "keys-err")
	c, _ := f.login(t, f.member(t, tn, "dev", policy.RoleDeveloper))
	page := "/console/t/" + tn.Slug + "/api-keys"
	c.get(page)

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"empty name", url.Values{"name": {" "}, "role": {"viewer"}}, http.StatusUnprocessableEntity, "invalid_name"},
		{"bad date", url.Values{"name": {"x"}, "role": {"viewer"}, "expires": {"soon"}}, http.StatusUnprocessableEntity, "invalid_expires"},
		{"past date", url.Values{"name": {"x"}, "role": {"viewer"}, "expires": {"2001-01-01"}}, http.StatusUnprocessableEntity, "invalid_expires_at"},
		{"above own role", url.Values{"name": {"x"}, "role": {"owner"}}, http.StatusForbidden, "role_escalation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, doc := c.htmx(http.MethodPost, page, tc.form)
			require.Equal(t, tc.status, res.StatusCode)
			require.Equal(t, tc.code, doc.Find(testID("form-error")).AttrOr("data-code", ""))
			require.Zero(t, doc.Find(testID("new-api-key")).Length())
		})
	}
}

func TestViewerCannotManageKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "keys-viewer")
	c, target := f.login(t, f.member(t, tn, "viewer", policy.RoleViewer))
	page := "/console/t/" + tn.Slug + "/api-keys"

	// The viewer's pages offer no way to keys: no nav entry, no invite form.
	res, doc := c.get(target)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("nav-api-keys")).Length())
	require.Zero(t, doc.Find(testID("invite-form")).Length())
	require.Zero(t, doc.Find(testID("member-remove")).Length())

	res, doc = c.get(page)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Zero(t, doc.Find(testID("create-key-form")).Length())

	// A hand-made request with a valid token is refused all the same.
	res, _ = c.htmx(http.MethodPost, page, url.Values{"name": {"sneaky"}, "role": {"viewer"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	keys, err := f.svc.ListAPIKeys(t.Context(), systemAccess(tn), pageAll)
	require.NoError(t, err)
	require.Empty(t, keys.Keys)
}

func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "keys-csrf")
	c, _ := f.login(t, f.member(t, tn, "owner", policy.RoleOwner))
	page := "/console/t/" + tn.Slug + "/api-keys"
	c.get(page)
	form := url.Values{"name": {"forged"}, "role": {"viewer"}}

	res, _ := c.send(http.MethodPost, page, form, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode, "no token")
	res, _ = c.send(http.MethodPost, page, form, http.Header{"X-Csrf-Token": {"not-the-token"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, "wrong header token")
	form.Set("csrf_token", c.csrf+"x")
	res, _ = c.send(http.MethodPost, page, form, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode, "wrong form token")

	keys, err := f.svc.ListAPIKeys(t.Context(), systemAccess(tn), pageAll)
	require.NoError(t, err)
	require.Empty(t, keys.Keys)

	// The plain form (no JavaScript) with the right token works.
	form.Set("csrf_token", c.csrf)
	res, doc := c.send(http.MethodPost, page, form, nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.True(t, strings.HasPrefix(doc.Find(testID("new-api-key")).Text(), "ap_"))
	require.Equal(t, 1, doc.Find("html > head title").Length(), "a plain post gets the whole document")
}

func TestCrossTenantIsNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mine, theirs := f.tenant(t, "mine"), f.tenant(t, "theirs")
	c, _ := f.login(t, f.member(t, mine, "owner", policy.RoleOwner))
	f.member(t, theirs, "other", policy.RoleOwner)
	c.get("/console/t/" + mine.Slug + "/members")

	_, missing := c.get("/console/t/no-such-tenant-" + f.suffix + "/members")
	want, _ := missing.Find(testID("error-page")).Html()
	for _, path := range []string{"/members", "/api-keys", "/audit"} {
		res, doc := c.get("/console/t/" + theirs.Slug + path)
		require.Equal(t, http.StatusNotFound, res.StatusCode, path)
		got, _ := doc.Find(testID("error-page")).Html()
		require.Equal(t, want, got, "another tenant looks exactly like no tenant")
	}
	res, _ := c.htmx(http.MethodPost, "/console/t/"+theirs.Slug+"/api-keys", url.Values{"name": {"x"}, "role": {"viewer"}})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	keys, err := f.svc.ListAPIKeys(t.Context(), systemAccess(theirs), pageAll)
	require.NoError(t, err)
	require.Empty(t, keys.Keys)
}
