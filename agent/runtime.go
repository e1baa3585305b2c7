package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/policy"
)

// ModelClient calls a model endpoint; agent/llm implements it.
type ModelClient interface {
	Complete(ctx context.Context, ep llm.Endpoint, req llm.Request, onDelta func(string), onRetry func(llm.RetryInfo)) (llm.Response, error)
}

// Principals answers a principal's live role in a tenant (the guardrail
// re-check at execution); tenants.Service implements it. A revoked key or a
// removed member gets an error.
type Principals interface {
	LiveRole(ctx context.Context, tenantID uuid.UUID, p policy.Principal) (policy.Role, error)
}

// Runtime is what executing runs needs beyond the database.
type Runtime struct {
	Models       ModelClient
	Tools        *tools.Registry
	Capabilities *policy.Capabilities
	Principals   Principals
	// Owner names this worker in run leases (host:pid or similar).
	Owner string
	// Sandboxes, when set, releases a thread's sandbox at run end.
	Sandboxes SandboxReleaser
}

// UseRuntime sets the execution dependencies (wiring step).
func (s *Service) UseRuntime(rt Runtime) error {
	if rt.Models == nil || rt.Tools == nil || rt.Capabilities == nil || rt.Principals == nil || rt.Owner == "" {
		return fmt.Errorf("agent runtime: models, tools, capabilities, principals and owner are required")
	}
	s.rt = rt
	return nil
}

func (s *Service) leaseTTLSeconds() float64 { return s.cfg.LeaseTTL.Seconds() }

func (s *Service) heartbeatEvery() time.Duration { return s.cfg.LeaseTTL / 3 }
