package tenants

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/internal/tenantsdb"
)

// Resolve finds the tenant named by slug as seen by p. A tenant that p has
// no standing in is reported exactly like one that does not exist, so a
// caller can never probe for other tenants' slugs.
func (s *Service) Resolve(ctx context.Context, p policy.Principal, slug string) (Access, error) {
	row, err := tenantsdb.New(s.pool).TenantBySlug(ctx, slug)
	if err != nil {
		return Access{}, notFound(fmt.Errorf("resolve tenant %q: %w", slug, err), "tenant", slug)
	}
	t := tenantFromRow(row)
	role, err := s.roleIn(ctx, p, t)
	if err != nil {
		return Access{}, err
	}
	if t.Status == StatusSuspended && !p.PlatformAdmin {
		return Access{}, ErrTenantSuspended
	}
	return Access{Principal: p, Tenant: t, Role: role}, nil
}

func (s *Service) roleIn(ctx context.Context, p policy.Principal, t Tenant) (policy.Role, error) {
	hidden := &NotFoundError{Kind: "tenant", Key: t.Slug}
	switch p.Kind {
	case policy.KindAPIKey:
		if p.TenantID != t.ID.String() {
			return "", hidden
		}
		return p.Role, nil
	case policy.KindUser:
		uid, err := uuid.Parse(p.ID)
		if err != nil {
			return "", hidden
		}
		role, err := tenantsdb.New(s.pool).MembershipRole(ctx, tenantsdb.MembershipRoleParams{TenantID: t.ID, UserID: uid})
		switch {
		case errors.Is(err, pgx.ErrNoRows) && p.PlatformAdmin:
			return "", nil
		case errors.Is(err, pgx.ErrNoRows):
			return "", hidden
		case err != nil:
			return "", fmt.Errorf("membership in %s: %w", t.Slug, err)
		}
		return policy.Role(role), nil
	}
	if p.PlatformAdmin {
		return "", nil
	}
	return "", hidden
}
