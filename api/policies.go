package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/policy"
)

// CapabilityRuleIO is one tenant capability rule.
type CapabilityRuleIO struct {
	Effect string `json:"effect" enum:"allow,deny" doc:"allow or deny; any matching deny wins."`
	Role   string `json:"role" enum:"owner,admin,developer,viewer,*" doc:"The role it applies to (exactly), or * for every role."`
	Target string `json:"target" pattern:"^(tool|group|model):([A-Za-z0-9_.-]{1,64}\\*?|\\*)$" doc:"tool:<name>, group:<name> or model:<name>; a trailing * matches a prefix." example:"tool:bash"`
}

type capabilitiesOut struct {
	Body struct {
		Rules []CapabilityRuleIO `json:"rules" doc:"The tenant's rules, on top of the built-in grants (members who may start runs may use every tool and model)."`
	}
}

type capabilitiesPutIn struct {
	TenantPath
	Body struct {
		Rules []CapabilityRuleIO `json:"rules" maxItems:"500" doc:"The complete new rule set; it replaces the old one."`
	}
}

func (s *Server) registerPolicies(api huma.API) {
	huma.Register(api, op("policy-capabilities-get", http.MethodGet, "/v1/tenants/{tenant}/policies/capabilities",
		"Get the capability policy", policy.PolicyRead, "Policies"),
		func(ctx context.Context, _ *TenantPath) (*capabilitiesOut, error) {
			rules, err := s.deps.Capabilities.Rules(ctx, accessFrom(ctx).Tenant.ID)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return capabilitiesOutOf(rules), nil
		})

	huma.Register(api, op("policy-capabilities-put", http.MethodPut, "/v1/tenants/{tenant}/policies/capabilities",
		"Replace the capability policy", policy.PolicyWrite, "Policies"),
		func(ctx context.Context, in *capabilitiesPutIn) (*capabilitiesOut, error) {
			rules := make([]policy.CapabilityRule, len(in.Body.Rules))
			for i, r := range in.Body.Rules {
				rules[i] = policy.CapabilityRule{Effect: r.Effect, Role: r.Role, Target: r.Target}
			}
			saved, err := s.deps.Tenants.SetCapabilityRules(ctx, accessFrom(ctx), rules)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return capabilitiesOutOf(saved), nil
		})
}

func capabilitiesOutOf(rules []policy.CapabilityRule) *capabilitiesOut {
	out := &capabilitiesOut{}
	out.Body.Rules = make([]CapabilityRuleIO, len(rules))
	for i, r := range rules {
		out.Body.Rules[i] = CapabilityRuleIO{Effect: r.Effect, Role: r.Role, Target: r.Target}
	}
	return out
}
