package bench_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type fixture struct {
	pool    *pgxpool.Pool
	handler http.Handler
	key     string
	slug    string
}

func setup(b *testing.B) fixture {
	b.Helper()
	ctx := b.Context()
	pool := pgtest.Pool(b)
	logger := slog.New(slog.DiscardHandler)
	svc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, logger)
	if err != nil {
		b.Fatal(err)
	}
	enf, err := policy.NewEnforcer()
	if err != nil {
		b.Fatal(err)
	}
	t, err := svc.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: "bench-" + pgtest.Suffix(), Name: "Bench"})
	if err != nil {
		b.Fatal(err)
	}
	key, err := svc.CreateAPIKey(ctx, tenants.Access{Principal: policy.System, Tenant: t}, tenants.CreateAPIKeyInput{Name: "bench", Role: policy.RoleViewer})
	if err != nil {
		b.Fatal(err)
	}
	srv := api.New(api.Deps{Tenants: svc, Enforcer: enf, Pool: pool, Logger: logger})
	return fixture{pool: pool, handler: srv.Handler(), key: key.Key, slug: t.Slug}
}

// baseline is the least a handler can do for the same answer: one query on
// the same pool, encoded as JSON, with no auth, routing or validation.
func (f fixture) baseline() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out struct {
			ID     string `json:"id"`
			Slug   string `json:"slug"`
			Name   string `json:"name"`
			Status string `json:"status"`
		}
		err := f.pool.QueryRow(r.Context(),
			`SELECT id::text, slug, name, status FROM tenants WHERE slug = $1 AND deleted_at IS NULL`, f.slug,
		).Scan(&out.ID, &out.Slug, &out.Name, &out.Status)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

func serveLoop(b *testing.B, h http.Handler, path, key string) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		serveOnce(b, h, path, key)
	}
}

func serveOnce(b *testing.B, h http.Handler, path, key string) {
	req := httptest.NewRequestWithContext(b.Context(), http.MethodGet, path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
}

// BenchmarkTenantGet measures an authorized GET /v1/tenants/{tenant} through
// the whole stack (API key authn, Casbin, Huma, SQL) against the baseline,
// each as its own sub-benchmark.
func BenchmarkTenantGet(b *testing.B) {
	f := setup(b)
	b.Run("baseline", func(b *testing.B) { serveLoop(b, f.baseline(), "/", "") })
	b.Run("api", func(b *testing.B) { serveLoop(b, f.handler, "/v1/tenants/"+f.slug, f.key) })
}

// BenchmarkTenantGetRatio interleaves one baseline request and one API
// request per iteration, timing each, so both sides see the same machine
// state; it reports their ns/op and the ratio api/baseline (target ≤ 1.5).
func BenchmarkTenantGetRatio(b *testing.B) {
	f := setup(b)
	base, full := f.baseline(), f.handler
	path := "/v1/tenants/" + f.slug
	var baseNs, fullNs time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		serveOnce(b, base, "/", "")
		mid := time.Now()
		serveOnce(b, full, path, f.key)
		baseNs += mid.Sub(start)
		fullNs += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(baseNs)/n, "baseline-ns/op")
	b.ReportMetric(float64(fullNs)/n, "api-ns/op")
	b.ReportMetric(float64(fullNs)/float64(baseNs), "ratio")
}
