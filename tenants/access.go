package tenants

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// LiveRole is a principal's role in a tenant right now, read from the
// database: the execution-time guardrail uses it so that a key revoked, a
// member removed or a tenant suspended mid-run stops the run's tools.
// Platform admin and system principals answer "" (they decide as owners).
func (s *Service) LiveRole(ctx context.Context, tenantID uuid.UUID, p policy.Principal) (policy.Role, error) {
	q := tenantsdb.New(s.pool)
	switch p.Kind {
	case policy.KindAPIKey:
		id, err := uuid.Parse(p.ID)
		if err != nil {
			return "", &AuthError{Code: "invalid_api_key", Message: "malformed key id"}
		}
		k, err := q.APIKeyStanding(ctx, tenantsdb.APIKeyStandingParams{TenantID: tenantID, ID: id})
		if err != nil {
			return "", notFound(err, "api key", p.ID)
		}
		e := keyEntry{expiresAt: k.ExpiresAt, revoked: k.RevokedAt != nil, suspended: k.TenantStatus == string(StatusSuspended)}
		if _, err := e.check(time.Now()); err != nil {
			return "", err
		}
		return policy.Role(k.Role), nil
	case policy.KindUser:
		uid, err := uuid.Parse(p.ID)
		if err != nil {
			return "", &NotFoundError{Kind: "member", Key: p.ID}
		}
		role, err := q.MembershipRole(ctx, tenantsdb.MembershipRoleParams{TenantID: tenantID, UserID: uid})
		if err != nil {
			return "", notFound(err, "member", p.ID)
		}
		t, err := q.TenantByID(ctx, tenantID)
		if err != nil {
			return "", notFound(err, "tenant", tenantID.String())
		}
		if Status(t.Status) == StatusSuspended {
			return "", ErrTenantSuspended
		}
		return policy.Role(role), nil
	case policy.KindPlatformAdmin, policy.KindSystem:
		return "", nil
	}
	return "", fmt.Errorf("unknown principal kind %q", p.Kind)
}
