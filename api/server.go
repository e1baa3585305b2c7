package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/api/docs"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// Version is the API version in the OpenAPI document.
const Version = "0.1.0"

// Deps are the services the API translates to. Pool is used only for health.
type Deps struct {
	Tenants  *tenants.Service
	Enforcer *policy.Enforcer
	Pool     *pgxpool.Pool
	Logger   *slog.Logger
	// AdminToken is the platform admin's bearer token; empty disables it.
	AdminToken string
	// Registry receives the HTTP metrics; nil means a private registry.
	Registry *prometheus.Registry
	// Ready reports whether the database is reachable and migrated.
	Ready func(ctx context.Context) error
	// Agents serves models, agents, threads and runs.
	Agents *agent.Service
	// Broker wakes run event streams; nil means streams poll.
	Broker *agent.Broker
	// Capabilities reads tenants' capability policies.
	Capabilities *policy.Capabilities
	// Secrets is the tenant secrets vault; nil answers its routes with 503.
	Secrets *secrets.Vault
}

// Server is the HTTP surface of the API.
type Server struct {
	deps   Deps
	logger *slog.Logger
	api    huma.API
	router chi.Router
}

// New builds the router: request ids, logging and metrics around Huma's
// /v1 operations, the OpenAPI document, /docs, health and /metrics.
// Extra handlers (console, River UI) are mounted by the caller via Mount.
func New(deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	r := chi.NewRouter()
	s := &Server{deps: deps, logger: deps.Logger, router: r}
	r.Use(withRequestID, s.logRequests, newMetrics(deps.Registry).middleware, s.recoverPanics)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeHTTPProblem(r.Context(), w, r, newProblem(http.StatusNotFound, "not_found", "no such route"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeHTTPProblem(r.Context(), w, r, newProblem(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here"))
	})
	s.api = newAPI(r)
	s.api.UseMiddleware(s.authorize)
	s.register(s.api)
	s.mountOps(r)
	h := docs.Handler("/openapi.json", "agentplane API")
	r.Handle("/docs", h)
	r.Handle("/docs/*", h)
	return s
}

// newAPI creates the Huma API with our error shape and security scheme.
func newAPI(r chi.Router) huma.API {
	useProblems()
	cfg := huma.DefaultConfig("agentplane API", Version)
	cfg.Info.Description = "Multi-tenant control plane for AI agents. Authenticate with `Authorization: Bearer <API key or admin token>`."
	cfg.DocsPath = "" // the vendored renderer in api/docs serves /docs offline
	cfg.OpenAPIPath = "/openapi"
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "An API key (ap_…) or the platform admin token."},
	}
	cfg.Security = []map[string][]string{{"bearer": {}}}
	return humachi.New(r, cfg)
}

// Handler returns the root handler.
func (s *Server) Handler() http.Handler { return s.router }

// Mount attaches another handler (console, River UI) under pattern.
func (s *Server) Mount(pattern string, h http.Handler) { s.router.Mount(pattern, h) }

// Handle attaches a handler to exactly pattern.
func (s *Server) Handle(pattern string, h http.Handler) { s.router.Handle(pattern, h) }

// API exposes the Huma API (tests walk its operations).
func (s *Server) API() huma.API { return s.api }

// register adds every resource's operations; the OpenAPI golden follows it.
func (s *Server) register(api huma.API) {
	s.registerTenants(api)
	s.registerMembers(api)
	s.registerAPIKeys(api)
	s.registerAudit(api)
	s.registerSecrets(api)
	s.registerModels(api)
	s.registerAgents(api)
	s.registerThreads(api)
	s.registerRuns(api)
	s.registerFiles(api)
	s.registerPolicies(api)
}

// Spec renders the OpenAPI document without any backing services, for
// `agentplane openapi` and the golden test.
func Spec() ([]byte, error) {
	s := &Server{logger: slog.New(slog.DiscardHandler)}
	api := newAPI(chi.NewRouter())
	s.register(api)
	return api.OpenAPI().YAML()
}
