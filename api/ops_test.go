package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/api"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.ok(t, http.StatusOK, http.MethodGet, "/healthz", "", nil)
	require.Equal(t, "ok", r.str("status"))
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	h := newHarness(t, func(d *api.Deps) {
		d.Ready = func(context.Context) error {
			if failing.Load() {
				return errors.New("migrations pending")
			}
			return nil
		}
	})
	r := h.ok(t, http.StatusOK, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, "ready", r.str("status"))

	failing.Store(true)
	r = h.do(t, http.MethodGet, "/readyz", "", nil)
	requireProblem(t, r, http.StatusServiceUnavailable, "not_ready")

	failing.Store(false)
	h.ok(t, http.StatusOK, http.MethodGet, "/readyz", "", nil)
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tn, owner := h.tenantWithOwner(t)
	h.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/"+tn.Slug, owner.Key, nil)

	r := h.ok(t, http.StatusOK, http.MethodGet, "/metrics", "", nil)
	body := string(r.Raw)
	require.Contains(t, body, "agentplane_http_request_duration_seconds")
	// Labelled by route pattern, never by the raw path (slug) or a credential.
	require.Contains(t, body, `route="/v1/tenants/{tenant}"`)
	require.NotContains(t, body, tn.Slug)
	require.NotContains(t, body, owner.Key)
}

func TestDocs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.ok(t, http.StatusOK, http.MethodGet, "/docs", "", nil)
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/html"), r.Header.Get("Content-Type"))
	require.Contains(t, strings.ToLower(string(r.Raw)), "<html")
	require.Contains(t, string(r.Raw), "/openapi.json")
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.ok(t, http.StatusOK, http.MethodGet, "/openapi.json", "", nil)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(r.Raw, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), doc.OpenAPI)
	for _, p := range []string{
		"/v1/tenants", "/v1/tenants/{tenant}", "/v1/tenants/{tenant}/members", "/v1/tenants/{tenant}/members/{member}",
		"/v1/tenants/{tenant}/api-keys", "/v1/tenants/{tenant}/api-keys/{key}", "/v1/tenants/{tenant}/audit-events",
	} {
		require.Contains(t, doc.Paths, p)
	}
	require.Len(t, doc.Paths, len(h.server.API().OpenAPI().Paths))

	// Every path parameter of every operation is declared, so clients (and
	// Huma's validation) know it.
	for _, o := range operations(h.server.API().OpenAPI()) {
		declared := map[string]bool{}
		for _, p := range o.Op.Parameters {
			if p.In == "path" {
				declared[p.Name] = true
			}
		}
		for _, m := range pathParamRE.FindAllStringSubmatch(o.Path, -1) {
			require.True(t, declared[m[1]], "%s %s: path parameter %s undeclared", o.Method, o.Path, m[1])
		}
	}
}

// PlatformOnly lets the platform admin through and hides the handler from
// everyone else behind the same 404 as an unknown path.
func TestPlatformOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, owner := h.tenantWithOwner(t)
	h.server.Mount("/ops-ui", h.server.PlatformOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("inside"))
	})))

	require.Equal(t, "inside", string(h.ok(t, http.StatusOK, http.MethodGet, "/ops-ui/", h.admin, nil).Raw))
	for name, token := range map[string]string{"anonymous": "", "owner key": owner.Key, "wrong token": h.admin + "x"} {
		r := h.do(t, http.MethodGet, "/ops-ui/", token, nil)
		require.Equal(t, http.StatusNotFound, r.Status, name)
		require.NotContains(t, string(r.Raw), "inside", name)
	}
}
