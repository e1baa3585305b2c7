package web

import (
	"context"
	"net/http"
	"regexp"

	"github.com/go-chi/chi/v5"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// Authorization mirrors api/authz.go: resolve the principal's standing in
// the {tenant} of the URL, then ask the enforcer for the permission the
// matching API operation declares. No standing is a 404 (indistinguishable
// from a tenant that does not exist); a refused permission is a 403.

var slugRE = regexp.MustCompile(tenants.SlugPattern)

// resolveTenant attaches the caller's access to the {tenant} of the URL.
func (c *Console) resolveTenant(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visitFrom(r.Context())
		slug := chi.URLParam(r, "tenant")
		if !slugRE.MatchString(slug) {
			c.notFound(w, r)
			return
		}
		a, err := c.deps.Tenants.Resolve(r.Context(), v.principal, slug)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		v.access = a
		next.ServeHTTP(w, r)
	})
}

// need refuses a tenant route unless the caller's role there grants perm.
func (c *Console) need(perm policy.Permission) func(http.Handler) http.Handler {
	return c.gate(perm, func(ctx context.Context) bool { return c.can(ctx, perm) })
}

// needPlatform refuses a route outside any tenant unless the caller holds
// perm platform-wide.
func (c *Console) needPlatform(perm policy.Permission) func(http.Handler) http.Handler {
	return c.gate(perm, func(ctx context.Context) bool { return c.canPlatform(ctx, perm) })
}

func (c *Console) gate(perm policy.Permission, allowed func(context.Context) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !allowed(r.Context()) {
				c.errorPage(w, r, http.StatusForbidden, "Not allowed",
					"Your role does not allow this ("+string(perm)+"). Ask a tenant owner if you need it.")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// can reports whether the caller holds perm in the resolved tenant. An
// evaluation error is a denial (fail closed) and is logged.
func (c *Console) can(ctx context.Context, perm policy.Permission) bool {
	v := visitFrom(ctx)
	if v == nil || v.access.Tenant.Slug == "" {
		return false
	}
	return c.allowed(ctx, v.access.Role, v.access.Tenant.ID.String(), perm)
}

// canPlatform reports whether the caller holds perm outside any tenant.
func (c *Console) canPlatform(ctx context.Context, perm policy.Permission) bool {
	return c.allowed(ctx, "", policy.DomainPlatform, perm)
}

func (c *Console) allowed(ctx context.Context, role policy.Role, domain string, perm policy.Permission) bool {
	v := visitFrom(ctx)
	if v == nil {
		return false
	}
	return c.allowedFor(ctx, v.principal, role, domain, perm)
}

func (c *Console) allowedFor(ctx context.Context, p policy.Principal, role policy.Role, domain string, perm policy.Permission) bool {
	ok, err := c.deps.Enforcer.Allowed(p, role, domain, perm)
	if err != nil {
		c.log.ErrorContext(ctx, "console authorization", "permission", string(perm), "error", err)
		return false
	}
	return ok
}

// grantable lists the roles the caller may hand out in the tenant, most
// powerful first: the same rule tenants applies (platform admins grant
// anything, everyone else at most their own role).
func grantable(a tenants.Access) []string {
	var out []string
	for _, r := range policy.Roles {
		if canGrant(a, r) {
			out = append(out, string(r))
		}
	}
	return out
}

// canGrant reports whether role is among the caller's grantable roles.
func canGrant(a tenants.Access, role policy.Role) bool {
	return a.Principal.PlatformAdmin || a.Role.AtLeast(role)
}
