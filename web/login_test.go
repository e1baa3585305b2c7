package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

func TestLoginSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "login-ok")
	email := f.member(t, tn, "alice", policy.RoleOwner)

	c := f.client(t)
	res, doc := c.get("/console/login")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("login-form")).Length())
	require.NotEmpty(t, c.csrf, "the login form carries a double-submit token")

	// The email is matched case-insensitively, as users type it.
	res, _ = c.send(http.MethodPost, "/console/login", url.Values{
		"email": {strings.ToUpper(email)}, "password": {testPassword}, "csrf_token": {c.csrf},
	}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/console/t/"+tn.Slug+"/members", res.Header.Get("Location"))

	var session *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == "agentplane_session" {
			session = ck
		}
	}
	require.NotNil(t, session)
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, session.SameSite)
	require.Equal(t, "/console", session.Path)
	require.False(t, session.Secure, "SecureCookies is off in this fixture")
	require.False(t, session.Expires.IsZero(), "the cookie expires with the session")

	res, doc = c.get(res.Header.Get("Location"))
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, email, doc.Find(testID("user-email")).Text())
	require.Equal(t, 1, doc.Find(testID("member-row")).Length())
	require.Contains(t, doc.Find(testID("tenant-switcher")).Text(), "login-ok")
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
}

func TestLoginPlatformAdminLandsOnTenants(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	email := f.user(t, "root", true)
	_, target := f.login(t, email)
	require.Equal(t, "/console/tenants", target)
}

func TestLoginWrongCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "login-bad")
	email := f.member(t, tn, "bob", policy.RoleViewer)

	var messages []string
	for _, creds := range [][2]string{{email, "wrong password!"}, {"nobody-" + f.suffix + "@example.com", testPassword}} {
		c := f.client(t)
		c.get("/console/login")
		res, doc := c.send(http.MethodPost, "/console/login", url.Values{"email": {creds[0]}, "password": {creds[1]}, "csrf_token": {c.csrf}}, nil)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		msg := doc.Find(testID("form-error")).Text()
		require.Contains(t, strings.ToLower(msg), "wrong email or password")
		for _, ck := range res.Cookies() {
			require.NotEqual(t, "agentplane_session", ck.Name)
		}
		messages = append(messages, msg)
	}
	require.Equal(t, messages[0], messages[1], "an unknown email and a wrong password look the same")
}

func TestLoginCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "login-csrf")
	email := f.member(t, tn, "carol", policy.RoleOwner)
	form := url.Values{"email": {email}, "password": {testPassword}}

	// No cookie at all: a cross-site form post.
	res, doc := f.client(t).send(http.MethodPost, "/console/login", form, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, 1, doc.Find(testID("error-page")).Length())

	// A cookie, but a token that does not match it.
	c := f.client(t)
	c.get("/console/login")
	form.Set("csrf_token", c.csrf+"x")
	res, _ = c.send(http.MethodPost, "/console/login", form, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Empty(t, f.limiter.keys(), "a refused token never reaches the limiter or the password check")
}

func TestLoginRateLimited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "login-rl")
	email := f.member(t, tn, "dave", policy.RoleOwner)

	// The email's budget is spent: even the right password is refused.
	f.limiter.set(100, "login:email:"+email)
	c := f.client(t)
	c.get("/console/login")
	res, doc := c.send(http.MethodPost, "/console/login", url.Values{"email": {email}, "password": {testPassword}, "csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Equal(t, "42", res.Header.Get("Retry-After"))
	require.Equal(t, "rate_limited", doc.Find(testID("form-error")).AttrOr("data-code", ""))
	require.Contains(t, doc.Find(testID("form-error")).Text(), "Too many login attempts")
	for _, ck := range res.Cookies() {
		require.NotEqual(t, "agentplane_session", ck.Name)
	}
	require.ElementsMatch(t, []string{"login:ip:127.0.0.1", "login:email:" + email}, f.limiter.keys())

	// Per IP: the third attempt from one address is refused.
	f.limiter.set(2)
	other := f.member(t, tn, "erin", policy.RoleViewer)
	var last int
	for range 3 {
		c := f.client(t)
		c.get("/console/login")
		res, _ := c.send(http.MethodPost, "/console/login", url.Values{"email": {other}, "password": {"nope nope nope"}, "csrf_token": {c.csrf}}, nil)
		last = res.StatusCode
	}
	require.Equal(t, http.StatusTooManyRequests, last)
}

func TestLogout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.tenant(t, "logout")
	email := f.member(t, tn, "frank", policy.RoleOwner)
	c, target := f.login(t, email)
	c.get(target)

	// Without the token the session survives.
	res, _ := c.send(http.MethodPost, "/console/logout", url.Values{}, nil)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	res, _ = c.send(http.MethodPost, "/console/logout", url.Values{"csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/console/login", res.Header.Get("Location"))

	res, _ = c.get(target)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/console/login", res.Header.Get("Location"))
}

func TestUnauthenticatedRedirects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(t)
	res, _ := c.get("/console/t/whatever/members")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/console/login", res.Header.Get("Location"))

	// htmx cannot follow a 303 into a fragment slot; it is told to navigate.
	res, _ = c.htmx(http.MethodGet, "/console/t/whatever/members", nil)
	require.Equal(t, "/console/login", res.Header.Get("HX-Redirect"))
}
