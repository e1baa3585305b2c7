package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

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
			p := newProblem(http.StatusServiceUnavailable, "not_ready", err.Error())
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
