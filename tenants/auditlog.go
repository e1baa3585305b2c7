package tenants

import (
	"context"
	"fmt"

	"github.com/agentplane/agentplane/tenants/audit"
)

// AuditEvents reads a page of a.Tenant's audit log.
func (s *Service) AuditEvents(ctx context.Context, a Access, f audit.Filter) (audit.Page, error) {
	page, err := audit.List(ctx, s.pool, a.Tenant.ID, f)
	if err != nil {
		return audit.Page{}, fmt.Errorf("list audit events of %s: %w", a.Tenant.Slug, err)
	}
	return page, nil
}
