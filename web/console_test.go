package web_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/web"
)

func TestNewRequiresDeps(t *testing.T) {
	t.Parallel()
	_, err := web.New(web.Deps{})
	require.Error(t, err)
}

func TestStaticFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(t)
	_, doc := c.get("/console/login")
	css, ok := doc.Find(`link[rel="stylesheet"]`).Attr("href")
	require.True(t, ok)
	js, ok := doc.Find(`script[src]`).Attr("src")
	require.True(t, ok)
	require.Regexp(t, `^/console/static/console\.css\?v=[0-9a-f]{12}$`, css)
	require.Regexp(t, `^/console/static/vendor/htmx\.min\.js\?v=`, js)

	for path, ctype := range map[string]string{css: "text/css", js: "javascript"} {
		res, err := http.Get(f.srv.URL + path)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Contains(t, res.Header.Get("Content-Type"), ctype)
		require.Equal(t, "public, max-age=31536000, immutable", res.Header.Get("Cache-Control"))
	}
	res, err := http.Get(f.srv.URL + "/console/static/console.css")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, "public, max-age=300", res.Header.Get("Cache-Control"), "unversioned links are cached briefly")

	for _, hidden := range []string{"/console/static/", "/console/static/vendor/", "/console/static/vendor/README.md"} {
		res, err := http.Get(f.srv.URL + hidden)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusNotFound, res.StatusCode, hidden)
	}
}

// TestNoExternalURLs checks the rendered pages and the stylesheet: the
// console must work offline and leak nothing to third parties.
func TestNoExternalURLs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "offline")
	c, _ := f.login(t, f.member(t, tn, "owner", policy.RoleOwner))
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, path := range []string{"/members", "/api-keys", "/audit"} {
		_, doc := c.get("/console/t/" + tn.Slug + path)
		html, err := doc.Html()
		require.NoError(t, err)
		require.False(t, external.MatchString(html), "%s: %s", path, external.FindString(html))
	}
	res, err := http.Get(f.srv.URL + "/console/static/console.css")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.NoError(t, err)
	require.NotContains(t, string(body), "url(")
	require.NotContains(t, string(body), "@import")
}

func TestPageChrome(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.tenant(t, "chrome-a"), f.tenant(t, "chrome-b")
	email := f.member(t, a, "owner", policy.RoleOwner)
	_, err := f.svc.AddMember(t.Context(), systemAccess(b), tenantsInput(email, policy.RoleViewer))
	require.NoError(t, err)
	c, target := f.login(t, email)

	res, doc := c.get(target)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'self'")
	headers, _ := doc.Find("body").Attr("hx-headers")
	require.Contains(t, headers, c.csrf, "htmx requests carry the session token")
	options := doc.Find(testID("tenant-switcher") + " option")
	require.Equal(t, 2, options.Length())
	require.Equal(t, a.Slug, doc.Find(testID("tenant-switcher")+" option[selected]").AttrOr("value", ""))
	for _, id := range []string{"nav-members", "nav-api-keys", "nav-audit", "logout"} {
		require.Equal(t, 1, doc.Find(testID(id)).Length(), id)
	}
	require.True(t, doc.Find(testID("nav-members")).HasClass("active"))

	// The switcher asks the server where to go.
	res, _ = c.htmx(http.MethodGet, "/console/switch?tenant="+b.Slug, nil)
	require.Equal(t, "/console/t/"+b.Slug+"/members", res.Header.Get("HX-Redirect"))
	res, doc = c.get("/console/t/" + b.Slug + "/members")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Zero(t, doc.Find(testID("nav-api-keys")).Length(), "a viewer in b has no key pages there")

	// The same URL as an htmx request is just the fragment.
	res, doc = c.htmx(http.MethodGet, "/console/t/"+a.Slug+"/members", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	html, _ := doc.Html()
	require.NotContains(t, html, "<header")
	require.Equal(t, 1, doc.Find(testID("members-table")).Length())

	res, _ = c.get("/console/nowhere")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = c.get("/console/")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.True(t, strings.HasSuffix(res.Header.Get("Location"), "/members"))
}
