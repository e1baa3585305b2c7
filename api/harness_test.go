package api_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// harness is one API server on a real listener over the package database.
type harness struct {
	server *api.Server
	srv    *httptest.Server
	pool   *pgxpool.Pool
	admin  string
	logs   *syncBuffer
	agents *agent.Service
	model  *llmtest.Server
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newHarness starts a server; opts may adjust the dependencies before New.
func newHarness(t *testing.T, opts ...func(*api.Deps)) *harness {
	t.Helper()
	pool := pgtest.Pool(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	require.NoError(t, err)
	enf, err := policy.NewEnforcer()
	require.NoError(t, err)
	agents, err := agent.NewService(pool, agent.Config{}, nil, logger)
	require.NoError(t, err)
	model := wireRuns(t, pool, agents, svc)
	deps := api.Deps{
		Tenants: svc, Enforcer: enf, Pool: pool, Logger: logger, Agents: agents,
		Capabilities: policy.NewCapabilities(pool), Broker: startBroker(t, pool),
		Secrets: testVault(t, pool), AdminToken: "adm_" + randomHex(24),
	}
	for _, o := range opts {
		o(&deps)
	}
	s := api.New(deps)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &harness{server: s, srv: srv, pool: pool, admin: deps.AdminToken, logs: logs, agents: agents, model: model}
}

// response is a decoded reply. JSON holds the body when it is a JSON object.
type response struct {
	Status int
	Header http.Header
	JSON   map[string]any
	Raw    []byte
}

func (r response) str(key string) string {
	s, _ := r.JSON[key].(string)
	return s
}

// list returns the objects under key (e.g. "api_keys").
func (r response) list(key string) []map[string]any {
	items, _ := r.JSON[key].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

// do sends one request. body is nil (none), a string or []byte (sent raw) or
// anything else (JSON-encoded). token "" sends no Authorization header.
func (h *harness) do(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	return h.doH(t, method, path, token, body, nil)
}

// doH is do with extra request headers.
func (h *harness) doH(t *testing.T, method, path, token string, body any, hdr http.Header) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, h.srv.URL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	res, err := h.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &out.JSON), "body: %s", raw)
	}
	return out
}

// ok sends a request and requires the given status.
func (h *harness) ok(t *testing.T, status int, method, path, token string, body any) response {
	t.Helper()
	r := h.do(t, method, path, token, body)
	require.Equal(t, status, r.Status, "%s %s: %s", method, path, r.Raw)
	return r
}

type tenant struct{ ID, Slug string }

type key struct{ ID, Key string }

func (h *harness) createTenant(t *testing.T) tenant {
	t.Helper()
	slug := randomSlug()
	r := h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants", h.admin, map[string]any{"slug": slug, "name": "Tenant " + slug})
	require.Equal(t, slug, r.str("slug"))
	return tenant{ID: r.str("id"), Slug: slug}
}

// createKey issues a key of role in slug, authenticated by token.
func (h *harness) createKey(t *testing.T, slug, token string, role policy.Role) key {
	t.Helper()
	r := h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants/"+slug+"/api-keys", token,
		map[string]any{"name": string(role) + " key", "role": role})
	require.NotEmpty(t, r.str("key"))
	return key{ID: r.str("id"), Key: r.str("key")}
}

// tenantWithOwner creates a tenant and an owner API key in it.
func (h *harness) tenantWithOwner(t *testing.T) (tenant, key) {
	t.Helper()
	tn := h.createTenant(t)
	return tn, h.createKey(t, tn.Slug, h.admin, policy.RoleOwner)
}

// addMember adds a member (password may be "") and returns its membership id.
func (h *harness) addMember(t *testing.T, slug, token, email string, role policy.Role, password string) string {
	t.Helper()
	body := map[string]any{"email": email, "role": role}
	if password != "" {
		body["password"] = password
	}
	r := h.ok(t, http.StatusCreated, http.MethodPost, "/v1/tenants/"+slug+"/members", token, body)
	return r.str("id")
}

// requireProblem asserts an RFC 9457 problem with our stable shape.
func requireProblem(t *testing.T, r response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Raw)
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), "body: %s", r.Raw)
	require.Equal(t, code, r.str("code"), "body: %s", r.Raw)
	require.EqualValues(t, status, r.JSON["status"])
	require.Equal(t, http.StatusText(status), r.str("title"))
	require.NotEmpty(t, r.Header.Get("X-Request-Id"))
	require.Equal(t, r.Header.Get("X-Request-Id"), r.str("request_id"), "body: %s", r.Raw)
}

// errorLocations lists the errors[].location of a validation problem.
func errorLocations(r response) []string {
	var out []string
	for _, e := range r.list("errors") {
		loc, _ := e["location"].(string)
		out = append(out, loc)
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomSlug() string  { return "t" + randomHex(8) }
func randomEmail() string { return "u" + randomHex(6) + "@example.com" }
