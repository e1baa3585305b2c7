package tenants

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/internal/tenantsdb"
)

// Status is a tenant's lifecycle state.
type Status string

const (
	StatusActive    Status = "active"
	StatusSuspended Status = "suspended"
)

// SlugPattern is what a tenant slug looks like; the API documents it too.
const SlugPattern = `^[a-z][a-z0-9-]{1,38}[a-z0-9]$`

var slugRE = regexp.MustCompile(SlugPattern)

// Tenant is an isolated customer of the platform.
type Tenant struct {
	ID        uuid.UUID
	Slug      string
	Name      string
	Status    Status
	CreatedAt time.Time
	UpdatedAt time.Time
}

func tenantFromRow(r tenantsdb.Tenant) Tenant {
	return Tenant{ID: r.ID, Slug: r.Slug, Name: r.Name, Status: Status(r.Status), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// CreateTenantInput is what a platform admin supplies.
type CreateTenantInput struct {
	Slug string
	Name string
}

// CreateTenant creates an active tenant. Only the platform admin reaches it.
func (s *Service) CreateTenant(ctx context.Context, actor policy.Principal, in CreateTenantInput) (Tenant, error) {
	if !slugRE.MatchString(in.Slug) {
		return Tenant{}, &InvalidError{Field: "slug", Message: "must match " + SlugPattern}
	}
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Tenant, error) {
		t, err := s.CreateTenantTx(ctx, tx, actor, in)
		return t, err
	})
}

// CreateTenantTx is CreateTenant inside the caller's transaction.
func (s *Service) CreateTenantTx(ctx context.Context, tx pgx.Tx, actor policy.Principal, in CreateTenantInput) (Tenant, error) {
	row, err := tenantsdb.New(tx).CreateTenant(ctx, tenantsdb.CreateTenantParams{ID: uuid.Must(uuid.NewV7()), Slug: in.Slug, Name: in.Name})
	if pg.IsCode(err, pg.CodeUniqueViolation) {
		return Tenant{}, &ConflictError{Code: "slug_taken", Message: fmt.Sprintf("tenant slug %q is taken", in.Slug)}
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("create tenant %q: %w", in.Slug, err)
	}
	t := tenantFromRow(row)
	a := Access{Principal: actor, Tenant: t}
	diff := map[string]any{"slug": t.Slug, "name": t.Name, "status": t.Status}
	return t, s.record(ctx, tx, a, "tenant.create", "tenant", t.ID.String(), diff)
}

// TenantPage is one page of tenants.
type TenantPage struct {
	Tenants    []Tenant
	NextCursor string
}

// ListTenants lists what the principal may see: every tenant for the
// platform admin, the key's own tenant for an API key, the user's
// memberships otherwise.
func (s *Service) ListTenants(ctx context.Context, p policy.Principal, page Page) (TenantPage, error) {
	after, err := page.after()
	if err != nil {
		return TenantPage{}, err
	}
	lim := page.limit()
	var rows []tenantsdb.Tenant
	switch {
	case p.PlatformAdmin:
		rows, err = tenantsdb.New(s.pool).ListAllTenants(ctx, tenantsdb.ListAllTenantsParams{After: after, Lim: lim})
	case p.Kind == policy.KindAPIKey:
		rows, err = s.keyTenant(ctx, p, after)
	default:
		uid, perr := uuid.Parse(p.ID)
		if perr != nil {
			return TenantPage{}, fmt.Errorf("list tenants: principal id %q: %w", p.ID, perr)
		}
		rows, err = tenantsdb.New(s.pool).ListUserTenants(ctx, tenantsdb.ListUserTenantsParams{UserID: uid, After: after, Lim: lim})
	}
	if err != nil {
		return TenantPage{}, fmt.Errorf("list tenants: %w", err)
	}
	out := TenantPage{Tenants: make([]Tenant, len(rows))}
	for i, r := range rows {
		out.Tenants[i] = tenantFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = nextCursor(n, lim, rows[n-1].ID)
	}
	return out, nil
}

func (s *Service) keyTenant(ctx context.Context, p policy.Principal, after *uuid.UUID) ([]tenantsdb.Tenant, error) {
	id, err := uuid.Parse(p.TenantID)
	if err != nil || (after != nil && *after == id) {
		return nil, nil
	}
	row, err := tenantsdb.New(s.pool).TenantByID(ctx, id)
	if err != nil {
		return nil, notFound(err, "tenant", p.TenantID)
	}
	return []tenantsdb.Tenant{row}, nil
}

// UpdateTenantInput changes a tenant; nil fields stay as they are.
type UpdateTenantInput struct {
	Name   *string
	Status *Status
}

// UpdateTenant renames, suspends or reactivates a tenant. Suspension and
// reactivation are reserved to the platform admin.
func (s *Service) UpdateTenant(ctx context.Context, a Access, in UpdateTenantInput) (Tenant, error) {
	if in.Status != nil && !a.Principal.PlatformAdmin {
		return Tenant{}, &ForbiddenError{Code: "platform_admin_required", Message: "only the platform admin may change a tenant's status"}
	}
	var status *string
	if in.Status != nil {
		st := string(*in.Status)
		status = &st
	}
	t, err := pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Tenant, error) {
		row, err := tenantsdb.New(tx).UpdateTenant(ctx, tenantsdb.UpdateTenantParams{ID: a.Tenant.ID, Name: in.Name, Status: status})
		if err != nil {
			return Tenant{}, notFound(fmt.Errorf("update tenant %s: %w", a.Tenant.Slug, err), "tenant", a.Tenant.Slug)
		}
		t := tenantFromRow(row)
		diff := changes(map[string][2]any{
			"name":   {a.Tenant.Name, t.Name},
			"status": {a.Tenant.Status, t.Status},
		})
		if len(diff) == 0 {
			return t, nil // nothing changed, nothing to audit
		}
		return t, s.record(ctx, tx, a, "tenant.update", "tenant", t.ID.String(), diff)
	})
	if err == nil {
		s.keys.purgeTenant(t.ID)
	}
	return t, err
}

// DeleteTenant hides the tenant and everything in it. Rows are kept so the
// audit chain survives; the slug becomes free again.
func (s *Service) DeleteTenant(ctx context.Context, a Access) error {
	defer s.keys.purgeTenant(a.Tenant.ID)
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		n, err := tenantsdb.New(tx).DeleteTenant(ctx, a.Tenant.ID)
		if err != nil {
			return fmt.Errorf("delete tenant %s: %w", a.Tenant.Slug, err)
		}
		if n == 0 {
			return &NotFoundError{Kind: "tenant", Key: a.Tenant.Slug}
		}
		return s.record(ctx, tx, a, "tenant.delete", "tenant", a.Tenant.ID.String(), map[string]any{"slug": a.Tenant.Slug})
	})
}

// changes keeps the fields whose value changed, as {"field": {"from", "to"}}.
func changes(fields map[string][2]any) map[string]any {
	out := map[string]any{}
	for k, v := range fields {
		if fmt.Sprint(v[0]) != fmt.Sprint(v[1]) {
			out[k] = map[string]any{"from": v[0], "to": v[1]}
		}
	}
	return out
}
