package api

import (
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// PlatformOnly guards a non-API handler (the River UI) so only the platform
// admin passes: by the admin bearer token or a console session of a user
// flagged platform admin. Everyone else gets 404, as for any hidden thing.
func (s *Server) PlatformOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.platformPrincipal(r)
		allowed := false
		if ok {
			var err error
			allowed, err = s.deps.Enforcer.Allowed(p, "", policy.DomainPlatform, policy.PlatformOps)
			allowed = allowed && err == nil
		}
		if !allowed {
			writeHTTPProblem(r.Context(), w, r, newProblem(http.StatusNotFound, "not_found", "not found"))
			return
		}
		next.ServeHTTP(w, r.WithContext(policy.WithPrincipal(r.Context(), p)))
	})
}

func (s *Server) platformPrincipal(r *http.Request) (policy.Principal, bool) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.deps.AdminToken != "" {
		if s.isAdminToken(token) {
			return adminPrincipal, true
		}
		return policy.Principal{}, false
	}
	c, err := r.Cookie(tenants.SessionCookie)
	if err != nil || c.Value == "" {
		return policy.Principal{}, false
	}
	sess, err := s.deps.Tenants.SessionByToken(r.Context(), c.Value)
	if err != nil || !sess.User.PlatformAdmin {
		return policy.Principal{}, false
	}
	return sess.User.Principal(), true
}
