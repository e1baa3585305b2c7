package api

import (
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentplane/agentplane/internal/requestid"
)

// A client may supply its own request id if it looks harmless.
var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !requestIDRE.MatchString(id) {
			id = requestid.New()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(requestid.With(r.Context(), id)))
	})
}

// logRequests logs one line per request. It never logs headers or bodies,
// which may carry credentials.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		level := slog.LevelInfo
		if ww.Status() >= 500 {
			level = slog.LevelError
		}
		s.logger.LogAttrs(r.Context(), level, "http request",
			slog.String("request_id", requestid.From(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", ww.Status()),
			slog.Int("bytes", ww.BytesWritten()),
			slog.Duration("took", time.Since(start)),
		)
	})
}

type metrics struct {
	requests *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agentplane_http_request_duration_seconds",
		Help:    "HTTP requests by method, route pattern and status.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route", "status"})}
	// A second server on the same registry (tests) reuses the collector.
	if err := reg.Register(m.requests); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			m.requests = are.ExistingCollector.(*prometheus.HistogramVec)
		}
	}
	return m
}

func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		// The route pattern, not the raw path, keeps label cardinality bounded.
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		m.requests.WithLabelValues(r.Method, route, strconv.Itoa(ww.Status())).Observe(time.Since(start).Seconds())
	})
}

// recoverPanics turns a handler panic into a logged 500 problem instead of
// a dropped connection.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil || v == http.ErrAbortHandler {
				if v != nil {
					panic(v)
				}
				return
			}
			s.logger.ErrorContext(r.Context(), "handler panic",
				slog.String("request_id", requestid.From(r.Context())),
				slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			writeHTTPProblem(r.Context(), w, r, newProblem(http.StatusInternalServerError, "internal", "internal error; quote the request id when reporting it"))
		}()
		next.ServeHTTP(w, r)
	})
}
