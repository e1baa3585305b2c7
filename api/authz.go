package api

import (
	"context"
	"crypto/subtle"
	"net/http"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// metaPermission is the operation metadata key holding its policy.Permission.
const metaPermission = "permission"

var slugRE = regexp.MustCompile(tenants.SlugPattern)

type accessKey struct{}

// pathKey carries the request path so handler errors can name it (instance).
type pathKey struct{}

// accessFrom returns what authorize resolved for a tenant-scoped operation.
func accessFrom(ctx context.Context) tenants.Access {
	a, _ := ctx.Value(accessKey{}).(tenants.Access)
	return a
}

// authorize is the one middleware that enforces permissions: it
// authenticates the caller, resolves the {tenant} path parameter to the
// caller's standing in it (404 when none), and asks the enforcer. An
// operation without a declared permission is refused outright.
func (s *Server) authorize(ctx huma.Context, next func(huma.Context)) {
	perm, _ := ctx.Operation().Metadata[metaPermission].(policy.Permission)
	if !perm.Known() {
		writeProblem(ctx, newProblem(http.StatusForbidden, "permission_undeclared", "this operation declares no permission"))
		return
	}
	p, prob := s.authenticate(ctx)
	if prob != nil {
		writeProblem(ctx, prob)
		return
	}
	c := policy.WithPrincipal(ctx.Context(), p)
	domain, access := policy.DomainPlatform, tenants.Access{Principal: p}
	if slug := ctx.Param("tenant"); slug != "" || strings.Contains(ctx.Operation().Path, "{tenant}") {
		if !slugRE.MatchString(slug) {
			prob := newProblem(http.StatusUnprocessableEntity, "validation_failed", "validation failed")
			prob.Errors = []*huma.ErrorDetail{{Message: "expected a tenant slug matching " + tenants.SlugPattern, Location: "path.tenant", Value: slug}}
			writeProblem(ctx, prob)
			return
		}
		a, err := s.deps.Tenants.Resolve(c, p, slug)
		if err != nil {
			writeProblem(ctx, problemFor(c, s.logger, err))
			return
		}
		domain, access = a.Tenant.ID.String(), a
	}
	ok, err := s.deps.Enforcer.Allowed(p, access.Role, domain, perm)
	if err != nil || !ok {
		// An evaluation error is a denial too (fail closed).
		writeProblem(ctx, newProblem(http.StatusForbidden, "forbidden", "your role does not allow "+string(perm)))
		return
	}
	c = context.WithValue(c, accessKey{}, access)
	c = context.WithValue(c, pathKey{}, ctx.URL().Path)
	next(huma.WithContext(ctx, c))
}

// authenticate reads the bearer credential: the platform admin token or an
// API key. Anything else, or nothing, is a 401.
func (s *Server) authenticate(ctx huma.Context) (policy.Principal, *Problem) {
	h := ctx.Header("Authorization")
	token, found := strings.CutPrefix(h, "Bearer ")
	if h == "" || !found || token == "" {
		return policy.Principal{}, newProblem(http.StatusUnauthorized, "unauthenticated", "send Authorization: Bearer <API key>")
	}
	if s.isAdminToken(token) {
		return adminPrincipal, nil
	}
	p, err := s.deps.Tenants.AuthenticateKey(ctx.Context(), token)
	if err != nil {
		return policy.Principal{}, problemFor(ctx.Context(), s.logger, err)
	}
	return p, nil
}

// adminPrincipal is who the platform admin token authenticates as.
var adminPrincipal = policy.Principal{Kind: policy.KindPlatformAdmin, ID: "admin-token", Label: "platform admin", PlatformAdmin: true}

// isAdminToken compares in constant time; an unset admin token matches nothing.
func (s *Server) isAdminToken(token string) bool {
	admin := s.deps.AdminToken
	return admin != "" && subtle.ConstantTimeCompare([]byte(token), []byte(admin)) == 1
}

// op builds an operation with its permission, a body limit and a tag.
func op(id, method, path, summary string, perm policy.Permission, tag string) huma.Operation {
	return huma.Operation{
		OperationID:  id,
		Method:       method,
		Path:         path,
		Summary:      summary,
		Tags:         []string{tag},
		Metadata:     map[string]any{metaPermission: perm},
		MaxBodyBytes: 64 << 10,
		Description:  "Requires permission `" + string(perm) + "`.",
	}
}
