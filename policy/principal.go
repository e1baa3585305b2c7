package policy

import (
	"context"
	"fmt"
)

// Role is a principal's role within one tenant.
type Role string

const (
	RoleOwner     Role = "owner"
	RoleAdmin     Role = "admin"
	RoleDeveloper Role = "developer"
	RoleViewer    Role = "viewer"
)

// Roles lists the tenant roles from most to least powerful.
var Roles = []Role{RoleOwner, RoleAdmin, RoleDeveloper, RoleViewer}

// rank orders roles so grants can be compared (higher is more powerful).
func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 4
	case RoleAdmin:
		return 3
	case RoleDeveloper:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Valid reports whether r is one of the tenant roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r is as powerful as other.
func (r Role) AtLeast(other Role) bool { return r.rank() >= other.rank() && r.Valid() }

// ParseRole validates s as a role.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !r.Valid() {
		return "", fmt.Errorf("unknown role %q", s)
	}
	return r, nil
}

// Kind says what sort of principal acted.
type Kind string

const (
	KindUser          Kind = "user"
	KindAPIKey        Kind = "api_key"
	KindPlatformAdmin Kind = "platform_admin"
	KindSystem        Kind = "system"
)

// Principal is an authenticated caller. An API key principal is bound to one
// tenant with one role; a user's role comes from its membership in the
// tenant being accessed; the platform admin may act in every tenant.
type Principal struct {
	Kind Kind
	// ID is the user id, the API key id, or a fixed name for admin/system.
	ID string
	// Label is a human name for logs and audit (email, key name); never a secret.
	Label string
	// TenantID and Role are set for API keys, whose access is fixed at creation.
	TenantID string
	Role     Role
	// PlatformAdmin marks the admin token and users flagged as platform admins.
	PlatformAdmin bool
}

// String renders the principal for audit records and logs, e.g. "api_key:0192…".
func (p Principal) String() string { return string(p.Kind) + ":" + p.ID }

// System is the principal for work the platform does on its own (dev seeding,
// periodic jobs).
var System = Principal{Kind: KindSystem, ID: "system", Label: "system", PlatformAdmin: true}

type principalKey struct{}

// WithPrincipal attaches p to ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal on ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
