package policy

import (
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/util"
)

//go:embed model.conf
var modelText string

//go:embed grants.csv
var grantsText string

// Subjects that are not tenant roles.
const (
	subjectPlatformAdmin = "platform_admin"
	subjectAuthenticated = "authenticated"
	// DomainPlatform is the domain for operations outside any tenant.
	DomainPlatform = "*"
)

// Enforcer decides API permissions. It is safe for concurrent use: the
// built-in grants are loaded once and never mutated afterwards. Decisions
// are cached (they sit on every request's path); a policy change through
// the enforcer invalidates the affected entries.
type Enforcer struct {
	e *casbin.SyncedCachedEnforcer
}

// decisionTTL bounds how long a cached decision lives, and so the cache's size.
const decisionTTL = time.Minute

// NewEnforcer builds the enforcer from the embedded model and grants.
func NewEnforcer() (*Enforcer, error) {
	m, err := model.NewModelFromString(modelText)
	if err != nil {
		return nil, fmt.Errorf("parse casbin model: %w", err)
	}
	e, err := casbin.NewSyncedCachedEnforcer(m)
	if err != nil {
		return nil, fmt.Errorf("new casbin enforcer: %w", err)
	}
	// Role inheritance is declared once for domain "*" and must hold in
	// every tenant, so domains in g() are matched as patterns.
	e.AddNamedDomainMatchingFunc("g", "keyMatch", util.KeyMatch)
	if err := loadGrants(e); err != nil {
		return nil, err
	}
	e.SetExpireTime(decisionTTL)
	return &Enforcer{e: e}, nil
}

func loadGrants(e *casbin.SyncedCachedEnforcer) error {
	for n, line := range strings.Split(grantsText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ",")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		var err error
		switch fields[0] {
		case "p":
			_, err = e.AddPolicy(toAny(fields[1:])...)
		case "g":
			_, err = e.AddGroupingPolicy(toAny(fields[1:])...)
		default:
			err = fmt.Errorf("unknown rule type %q", fields[0])
		}
		if err != nil {
			return fmt.Errorf("grants.csv line %d: %w", n+1, err)
		}
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Grants returns the built-in policy lines ("p" rules) as [sub, dom, obj, act, eft].
func (e *Enforcer) Grants() ([][]string, error) { return e.e.GetPolicy() }

// AllowedRole reports whether role may use perm in the tenant (domain).
// Any evaluation error is a denial (fail closed) and is returned.
func (e *Enforcer) AllowedRole(role Role, domain string, perm Permission) (bool, error) {
	if !role.Valid() {
		return false, nil
	}
	return e.enforce(string(role), domain, perm)
}

// Allowed decides for a principal that has been resolved to role in the
// tenant domain (role is ignored for the platform admin; use "" when the
// principal has no membership there).
func (e *Enforcer) Allowed(p Principal, role Role, domain string, perm Permission) (bool, error) {
	if p.PlatformAdmin {
		return e.enforce(subjectPlatformAdmin, domain, perm)
	}
	if domain == DomainPlatform {
		return e.enforce(subjectAuthenticated, domain, perm)
	}
	return e.AllowedRole(role, domain, perm)
}

func (e *Enforcer) enforce(sub, domain string, perm Permission) (bool, error) {
	obj, act, err := perm.Split()
	if err != nil {
		return false, err
	}
	ok, err := e.e.Enforce(sub, domain, obj, act)
	if err != nil {
		return false, fmt.Errorf("enforce %s on %s: %w", perm, domain, err)
	}
	return ok, nil
}
