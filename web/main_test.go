package web_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testPassword is every seeded user's password.
const testPassword = "correct horse battery"

// fixture is a console on a real server over the package's test database.
// Tests share the database, so every fixture names its tenants and users
// with a random suffix.
type fixture struct {
	svc     *tenants.Service
	limiter *memLimiter
	srv     *httptest.Server
	suffix  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := tenants.NewService(pgtest.Pool(t), tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	return serveConsole(t, web.Deps{Tenants: svc})
}

// serveConsole serves a console on deps under /console on a real server;
// it fills in the enforcer, a discarding logger and an in-memory limiter.
func serveConsole(t *testing.T, deps web.Deps) *fixture {
	t.Helper()
	enforcer, err := policy.NewEnforcer()
	require.NoError(t, err)
	lim := &memLimiter{max: 100}
	deps.Enforcer, deps.Limiter = enforcer, lim
	deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	console, err := web.New(deps)
	require.NoError(t, err)
	router := chi.NewRouter()
	router.Mount("/console", console)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return &fixture{svc: deps.Tenants, limiter: lim, srv: srv, suffix: randomHex(4)}
}

// tenant creates a tenant whose slug starts with name.
func (f *fixture) tenant(t *testing.T, name string) tenants.Tenant {
	t.Helper()
	tn, err := f.svc.CreateTenant(t.Context(), policy.System, tenants.CreateTenantInput{Slug: name + "-" + f.suffix, Name: name})
	require.NoError(t, err)
	return tn
}

// member creates a user (name@…) with testPassword and adds it to tn.
func (f *fixture) member(t *testing.T, tn tenants.Tenant, name string, role policy.Role) string {
	t.Helper()
	email := f.user(t, name, false)
	_, err := f.svc.AddMember(t.Context(), tenants.Access{Principal: policy.System, Tenant: tn}, tenants.AddMemberInput{Email: email, Role: role})
	require.NoError(t, err)
	return email
}

// user creates a user without memberships and returns its email.
func (f *fixture) user(t *testing.T, name string, platformAdmin bool) string {
	t.Helper()
	email := name + "-" + f.suffix + "@example.com"
	_, err := f.svc.EnsureUser(t.Context(), email, testPassword, platformAdmin)
	require.NoError(t, err)
	return email
}

// systemAccess reads a tenant behind the console's back.
func systemAccess(tn tenants.Tenant) tenants.Access {
	return tenants.Access{Principal: policy.System, Tenant: tn}
}

var pageAll = tenants.Page{Limit: 200}

func tenantsInput(email string, role policy.Role) tenants.AddMemberInput {
	return tenants.AddMemberInput{Email: email, Role: role}
}

// client is a cookie-keeping HTTP client that does not follow redirects.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	// csrf is the token of the last page that had a form.
	csrf string
}

func (f *fixture) client(t *testing.T) *client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &client{t: t, base: f.srv.URL, http: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// login signs in through the form and returns the logged-in client and the
// redirect target.
func (f *fixture) login(t *testing.T, email string) (*client, string) {
	t.Helper()
	c := f.client(t)
	res, _ := c.get("/console/login")
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = c.send(http.MethodPost, "/console/login", url.Values{"email": {email}, "password": {testPassword}, "csrf_token": {c.csrf}}, nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	return c, res.Header.Get("Location")
}

// get fetches a page and parses it.
func (c *client) get(path string) (*http.Response, *goquery.Document) {
	c.t.Helper()
	return c.send(http.MethodGet, path, nil, nil)
}

// htmx sends a request as htmx would: the CSRF header, form values in the
// body (or the query for DELETE, like htmx), HX-Request set.
func (c *client) htmx(method, path string, form url.Values) (*http.Response, *goquery.Document) {
	c.t.Helper()
	return c.send(method, path, form, http.Header{"Hx-Request": {"true"}, "X-Csrf-Token": {c.csrf}})
}

func (c *client) send(method, path string, form url.Values, h http.Header) (*http.Response, *goquery.Document) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, body)
	require.NoError(c.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer func() { _ = res.Body.Close() }()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	require.NoError(c.t, err)
	if tok, ok := doc.Find(`input[name="csrf_token"]`).First().Attr("value"); ok {
		c.csrf = tok
	}
	return res, doc
}

// testID selects elements by data-testid.
func testID(id string) string { return `[data-testid="` + id + `"]` }

// memLimiter is a minimal in-memory LoginLimiter: at most max attempts per
// key, ever, plus keys forced to refuse. It records what it was asked.
type memLimiter struct {
	mu     sync.Mutex
	max    int
	counts map[string]int
	refuse map[string]bool
	asked  []string
}

func (l *memLimiter) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.asked = append(l.asked, key)
	l.counts[key]++
	if l.refuse[key] || l.counts[key] > l.max {
		return false, 42 * time.Second, nil
	}
	return true, 0, nil
}

func (l *memLimiter) set(max int, refuse ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.max = max
	l.counts = nil
	l.asked = nil
	l.refuse = map[string]bool{}
	for _, k := range refuse {
		l.refuse[k] = true
	}
}

func (l *memLimiter) keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.asked...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
