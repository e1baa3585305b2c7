package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// LoginLimiter throttles login attempts by key ("login:ip:<ip>",
// "login:email:<email>"). internal/ratelimit provides Redis and in-memory
// implementations; the console only needs this one method.
type LoginLimiter interface {
	// Allow records an attempt for key and reports whether it may proceed;
	// when not, retryAfter says how long until it may.
	Allow(ctx context.Context, key string) (allowed bool, retryAfter time.Duration, err error)
}

// Deps is what the console is built from.
type Deps struct {
	Tenants  *tenants.Service
	Enforcer *policy.Enforcer
	// Agents serves the model endpoint, agent, thread and run pages; nil
	// leaves them out.
	Agents *agent.Service
	// Broker wakes the run page's live event stream; nil makes the stream
	// poll the events table instead.
	Broker *agent.Broker
	// Logger receives handler failures; nil discards them.
	Logger  *slog.Logger
	Limiter LoginLimiter
	// SecureCookies sets the Secure flag on cookies; false only for plain
	// http in development.
	SecureCookies bool
	// Secrets serves the secrets page; nil leaves it out.
	Secrets *secrets.Vault
}

// Console is the admin console, an http.Handler to mount at ui.Prefix:
// router.Mount("/console", console).
type Console struct {
	deps   Deps
	log    *slog.Logger
	static *staticAssets
	router chi.Router
}

// New builds the console.
func New(d Deps) (*Console, error) {
	switch {
	case d.Tenants == nil:
		return nil, errors.New("web: Deps.Tenants is required")
	case d.Enforcer == nil:
		return nil, errors.New("web: Deps.Enforcer is required")
	case d.Limiter == nil:
		return nil, errors.New("web: Deps.Limiter is required")
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static, err := newStaticAssets()
	if err != nil {
		return nil, fmt.Errorf("web: static files: %w", err)
	}
	c := &Console{deps: d, log: log, static: static}
	c.router = c.routes()
	return c, nil
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.router.ServeHTTP(w, r)
}

// routes lists every console URL. Paths are relative to the mount point.
// Each tenant route names the permission of the API operation it mirrors;
// the PATCH/DELETE routes serve htmx, and their POST twins serve the same
// forms without JavaScript.
func (c *Console) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(securityHeaders)
	r.NotFound(c.notFound)
	r.Handle(staticPrefix+"*", c.static)
	r.Get("/login", c.loginPage)
	r.Post("/login", c.login)

	r.Group(func(r chi.Router) {
		r.Use(c.requireSession, c.checkCSRF)
		r.Get("/", c.home)
		r.Post("/logout", c.logout)
		r.Get("/switch", c.switchTenant)
		r.With(c.needPlatform(policy.TenantCreate)).Get("/tenants", c.tenantsPage)
		r.With(c.needPlatform(policy.TenantCreate)).Post("/tenants", c.createTenant)

		r.Route("/t/{tenant}", func(r chi.Router) {
			r.Use(c.resolveTenant)
			r.Get("/", c.tenantHome)

			r.With(c.need(policy.MemberRead)).Get("/members", c.membersPage)
			r.Group(func(r chi.Router) {
				r.Use(c.need(policy.MemberWrite))
				r.Post("/members", c.addMember)
				r.Patch("/members/{member}", c.updateMember)
				r.Post("/members/{member}/role", c.updateMember)
				r.Delete("/members/{member}", c.removeMember)
				r.Post("/members/{member}/remove", c.removeMember)
			})

			r.With(c.need(policy.APIKeyRead)).Get("/api-keys", c.apiKeysPage)
			r.Group(func(r chi.Router) {
				r.Use(c.need(policy.APIKeyWrite))
				r.Post("/api-keys", c.createAPIKey)
				r.Delete("/api-keys/{key}", c.revokeAPIKey)
				r.Post("/api-keys/{key}/revoke", c.revokeAPIKey)
			})

			r.With(c.need(policy.AuditRead)).Get("/audit", c.auditPage)
			if c.deps.Secrets != nil {
				c.secretRoutes(r)
			}

			if c.deps.Agents != nil {
				c.modelRoutes(r)
				c.agentRoutes(r)
				c.threadRoutes(r)
				c.runRoutes(r)
			}
		})
	})
	return r
}

// securityHeaders keeps pages out of caches and frames and confines
// scripts, styles and requests to the console's own origin; it is also the
// enforcement of "no external URLs".
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		// Fragments and full pages share URLs.
		h.Add("Vary", "HX-Request")
		next.ServeHTTP(w, r)
	})
}
