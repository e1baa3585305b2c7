package policy

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/policy/internal/policydb"
)

//go:embed capability.conf
var capabilityModelText string

//go:embed capability_grants.csv
var capabilityGrantsText string

// Capability names something a run may use: a tool (with its group) or a model.
type Capability struct {
	Kind  string // "tool" or "model"
	Name  string
	Group string // tools only; may be empty
}

func (c Capability) object() string { return c.Kind + ":" + c.Name }

func (c Capability) group() string {
	if c.Kind != "tool" || c.Group == "" {
		return ""
	}
	return "group:" + c.Group
}

// CapabilityRule is one tenant-editable rule: Effect (allow|deny) for Role
// ("owner", "admin", "developer", "viewer" or "*") on Target, which is
// "tool:<name>", "group:<name>" or "model:<name>" (a trailing * matches a
// prefix, e.g. "tool:*").
type CapabilityRule struct {
	Effect string
	Role   string
	Target string
}

var targetRE = regexp.MustCompile(`^(tool|group|model):([A-Za-z0-9_.-]{1,64}\*?|\*)$`)

// Validate checks one rule; the message names what is wrong.
func (r CapabilityRule) Validate() error {
	if r.Effect != "allow" && r.Effect != "deny" {
		return fmt.Errorf("effect %q: must be allow or deny", r.Effect)
	}
	if r.Role != "*" && !Role(r.Role).Valid() {
		return fmt.Errorf("role %q: must be owner, admin, developer, viewer or *", r.Role)
	}
	if !targetRE.MatchString(r.Target) {
		return fmt.Errorf("target %q: must be tool:<name>, group:<name> or model:<name>", r.Target)
	}
	if strings.HasPrefix(r.Target, "group:") && strings.HasSuffix(r.Target, "*") {
		return fmt.Errorf("target %q: groups are matched by exact name", r.Target)
	}
	return nil
}

// parsedCapabilityModel parses the embedded model once; each Load works on
// a copy, since an enforcer fills its model with the loaded rules.
var parsedCapabilityModel = sync.OnceValues(func() (model.Model, error) {
	m, err := model.NewModelFromString(capabilityModelText)
	if err != nil {
		return nil, fmt.Errorf("parse capability model: %w", err)
	}
	return m, nil
})

// Capabilities loads capability decisions for a tenant.
type Capabilities struct {
	pool    *pgxpool.Pool
	adapter *Adapter
}

// NewCapabilities reads tenant rules through the pgx adapter.
func NewCapabilities(pool *pgxpool.Pool) *Capabilities {
	return &Capabilities{pool: pool, adapter: NewAdapter(pool)}
}

// CapabilitySet is one tenant's policy as loaded at one moment.
type CapabilitySet struct {
	tenant string
	e      *casbin.Enforcer
}

// Load builds the tenant's current policy: built-in grants plus its rules.
// Callers treat an error as "nothing is allowed" (fail closed).
func (c *Capabilities) Load(ctx context.Context, tenantID uuid.UUID) (*CapabilitySet, error) {
	base, err := parsedCapabilityModel()
	if err != nil {
		return nil, err
	}
	e, err := casbin.NewEnforcer(base.Copy())
	if err != nil {
		return nil, fmt.Errorf("capability enforcer: %w", err)
	}
	e.EnableAutoSave(false)
	if err := c.adapter.LoadFilteredPolicy(e.GetModel(), TenantFilter{TenantID: tenantID}); err != nil {
		return nil, fmt.Errorf("load capability rules of %s: %w", tenantID, err)
	}
	if err := e.BuildRoleLinks(); err != nil {
		return nil, fmt.Errorf("capability roles: %w", err)
	}
	for n, line := range strings.Split(capabilityGrantsText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ",")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if _, err := e.AddPolicy(toAny(fields[1:])...); err != nil {
			return nil, fmt.Errorf("capability_grants.csv line %d: %w", n+1, err)
		}
	}
	return &CapabilitySet{tenant: tenantID.String(), e: e}, nil
}

// Allowed decides one capability for role. The platform admin and system
// principals decide as owners.
func (s *CapabilitySet) Allowed(role Role, c Capability) (bool, error) {
	if role == "" {
		role = RoleOwner
	}
	ok, err := s.e.Enforce(string(role), s.tenant, c.object(), c.group(), "use")
	if err != nil {
		return false, fmt.Errorf("enforce %s for %s: %w", c.object(), role, err)
	}
	return ok, nil
}

// Rules returns the tenant's own rules in order.
func (c *Capabilities) Rules(ctx context.Context, tenantID uuid.UUID) ([]CapabilityRule, error) {
	rows, err := policydb.New(c.pool).TenantCapabilityRules(ctx, &tenantID)
	if err != nil {
		return nil, fmt.Errorf("list capability rules: %w", err)
	}
	out := make([]CapabilityRule, len(rows))
	for i, r := range rows {
		out[i] = CapabilityRule{Role: r.V0, Target: r.V2, Effect: r.V4}
	}
	return out, nil
}

// ReplaceRulesTx swaps the tenant's rules for rules in the caller's
// transaction (which also writes the audit event).
func ReplaceRulesTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, rules []CapabilityRule) error {
	q := policydb.New(tx)
	if err := q.DeleteTenantCapabilityRules(ctx, &tenantID); err != nil {
		return fmt.Errorf("clear capability rules: %w", err)
	}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rule %d: %w", i, err)
		}
		err := q.InsertRule(ctx, policydb.InsertRuleParams{
			TenantID: &tenantID, Ptype: "p", V0: r.Role, V1: tenantID.String(), V2: r.Target, V3: "use", V4: r.Effect,
		})
		if err != nil {
			return fmt.Errorf("insert capability rule %d: %w", i, err)
		}
	}
	return nil
}
