package tenants

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/policy"
)

// SetCapabilityRules replaces a.Tenant's capability rules and audits the
// change in one transaction. Runs pick the new policy up at their next
// tool call (the execution gate reloads it).
func (s *Service) SetCapabilityRules(ctx context.Context, a Access, rules []policy.CapabilityRule) ([]policy.CapabilityRule, error) {
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, &InvalidError{Field: fmt.Sprintf("rules[%d]", i), Message: err.Error()}
		}
	}
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := policy.ReplaceRulesTx(ctx, tx, a.Tenant.ID, rules); err != nil {
			return err
		}
		list := make([]string, len(rules))
		for i, r := range rules {
			list[i] = r.Effect + " " + r.Role + " " + r.Target
		}
		return s.record(ctx, tx, a, "policy.capabilities.replace", "policy", "capabilities", map[string]any{"rules": list})
	})
	if err != nil {
		return nil, err
	}
	return rules, nil
}
