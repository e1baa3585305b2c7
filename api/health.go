package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// mountOps adds the unauthenticated operational endpoints. They are plain
// handlers, not API operations: probes and scrapers speak no OpenAPI.
func (s *Server) mountOps(r interface {
	Get(string, http.HandlerFunc)
	Handle(string, http.Handler)
}) {
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", s.readyz)
	r.Handle("/metrics", promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{}))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if s.deps.Ready != nil {
		if err := s.deps.Ready(ctx); err != nil {
			// The cause may name hosts or schema details: log it, don't show it.
			s.logger.WarnContext(r.Context(), "not ready", slog.String("error", err.Error()))
			p := newProblem(http.StatusServiceUnavailable, "not_ready", "database unreachable or migrations pending")
			writeHTTPProblem(r.Context(), w, r, p)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// OpsHandler serves only the operational endpoints, for worker-only
// processes that expose no API.
func OpsHandler(deps Deps) http.Handler {
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{deps: deps, logger: deps.Logger}
	r := chi.NewRouter()
	r.Use(withRequestID)
	s.mountOps(r)
	return r
}
