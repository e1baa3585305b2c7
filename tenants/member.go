package tenants

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/internal/tenantsdb"
)

// Member is a user's membership in a tenant.
type Member struct {
	ID        uuid.UUID
	UserID    uuid.UUID
	Email     string
	Role      policy.Role
	CreatedAt time.Time
	UpdatedAt time.Time
}

func memberFromRow(id, userID uuid.UUID, email, role string, created, updated time.Time) Member {
	return Member{ID: id, UserID: userID, Email: email, Role: policy.Role(role), CreatedAt: created, UpdatedAt: updated}
}

// AddMemberInput invites a user by email. Password is used only when the
// user does not exist yet; an existing user's password is never changed by
// a tenant admin.
type AddMemberInput struct {
	Email    string
	Role     policy.Role
	Password *string
}

// AddMember adds (creating if needed) the user as a member of a.Tenant.
func (s *Service) AddMember(ctx context.Context, a Access, in AddMemberInput) (Member, error) {
	email, err := normalizeEmail(in.Email)
	if err != nil {
		return Member{}, err
	}
	if !a.canGrant(in.Role) {
		return Member{}, roleEscalation(in.Role)
	}
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Member, error) {
		user, err := s.ensureUser(ctx, tx, email, in.Password)
		if err != nil {
			return Member{}, err
		}
		row, err := tenantsdb.New(tx).CreateMembership(ctx, tenantsdb.CreateMembershipParams{
			TenantID: a.Tenant.ID, ID: uuid.Must(uuid.NewV7()), UserID: user.ID, Role: string(in.Role),
		})
		if pg.IsCode(err, pg.CodeUniqueViolation) {
			return Member{}, &ConflictError{Code: "already_member", Message: fmt.Sprintf("%s is already a member", email)}
		}
		if err != nil {
			return Member{}, fmt.Errorf("add member %s: %w", email, err)
		}
		m := memberFromRow(row.ID, row.UserID, user.Email, row.Role, row.CreatedAt, row.UpdatedAt)
		return m, s.record(ctx, tx, a, "member.create", "member", m.ID.String(), map[string]any{"email": m.Email, "role": m.Role})
	})
}

func (s *Service) ensureUser(ctx context.Context, tx pgx.Tx, email string, password *string) (tenantsdb.User, error) {
	user, err := tenantsdb.New(tx).UserByEmail(ctx, email)
	if err == nil {
		return user, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return tenantsdb.User{}, fmt.Errorf("look up user %s: %w", email, err)
	}
	return s.createUserTx(ctx, tx, email, password, false)
}

// MemberPage is one page of members.
type MemberPage struct {
	Members    []Member
	NextCursor string
}

// ListMembers lists a tenant's members in the order they joined.
func (s *Service) ListMembers(ctx context.Context, a Access, page Page) (MemberPage, error) {
	after, err := page.after()
	if err != nil {
		return MemberPage{}, err
	}
	lim := page.limit()
	rows, err := tenantsdb.New(s.pool).ListMembers(ctx, tenantsdb.ListMembersParams{TenantID: a.Tenant.ID, After: after, Lim: lim})
	if err != nil {
		return MemberPage{}, fmt.Errorf("list members of %s: %w", a.Tenant.Slug, err)
	}
	out := MemberPage{Members: make([]Member, len(rows))}
	for i, r := range rows {
		out.Members[i] = memberFromRow(r.ID, r.UserID, r.Email, r.Role, r.CreatedAt, r.UpdatedAt)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = nextCursor(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// GetMember returns one member of a.Tenant.
func (s *Service) GetMember(ctx context.Context, a Access, id uuid.UUID) (Member, error) {
	r, err := tenantsdb.New(s.pool).MemberByID(ctx, tenantsdb.MemberByIDParams{TenantID: a.Tenant.ID, ID: id})
	if err != nil {
		return Member{}, notFound(err, "member", id.String())
	}
	return memberFromRow(r.ID, r.UserID, r.Email, r.Role, r.CreatedAt, r.UpdatedAt), nil
}

// UpdateMemberRole changes a member's role. The caller must outrank both the
// old and the new role, and the tenant's last owner cannot be demoted.
func (s *Service) UpdateMemberRole(ctx context.Context, a Access, id uuid.UUID, role policy.Role) (Member, error) {
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Member, error) {
		cur, err := s.lockedMember(ctx, tx, a, id)
		if err != nil {
			return Member{}, err
		}
		if !a.canGrant(role) || !a.canGrant(cur.Role) {
			return Member{}, roleEscalation(maxRole(role, cur.Role))
		}
		if cur.Role == policy.RoleOwner && role != policy.RoleOwner {
			if err := s.keepAnOwner(ctx, tx, a); err != nil {
				return Member{}, err
			}
		}
		if _, err := tenantsdb.New(tx).UpdateMemberRole(ctx, tenantsdb.UpdateMemberRoleParams{TenantID: a.Tenant.ID, ID: id, Role: string(role)}); err != nil {
			return Member{}, fmt.Errorf("update member %s: %w", id, err)
		}
		diff := changes(map[string][2]any{"role": {cur.Role, role}})
		diff["email"] = cur.Email
		updated := cur
		updated.Role = role
		return updated, s.record(ctx, tx, a, "member.update", "member", id.String(), diff)
	})
}

// RemoveMember removes a membership (the user itself remains).
func (s *Service) RemoveMember(ctx context.Context, a Access, id uuid.UUID) error {
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		cur, err := s.lockedMember(ctx, tx, a, id)
		if err != nil {
			return err
		}
		if !a.canGrant(cur.Role) {
			return roleEscalation(cur.Role)
		}
		if cur.Role == policy.RoleOwner {
			if err := s.keepAnOwner(ctx, tx, a); err != nil {
				return err
			}
		}
		if _, err := tenantsdb.New(tx).DeleteMember(ctx, tenantsdb.DeleteMemberParams{TenantID: a.Tenant.ID, ID: id}); err != nil {
			return fmt.Errorf("remove member %s: %w", id, err)
		}
		return s.record(ctx, tx, a, "member.delete", "member", id.String(), map[string]any{"email": cur.Email, "role": cur.Role})
	})
}

// lockedMember reads a member after locking the tenant's owner rows, so the
// last-owner rule holds against concurrent demotions.
func (s *Service) lockedMember(ctx context.Context, tx pgx.Tx, a Access, id uuid.UUID) (Member, error) {
	if _, err := tenantsdb.New(tx).LockOwners(ctx, a.Tenant.ID); err != nil {
		return Member{}, fmt.Errorf("lock owners of %s: %w", a.Tenant.Slug, err)
	}
	r, err := tenantsdb.New(tx).MemberByID(ctx, tenantsdb.MemberByIDParams{TenantID: a.Tenant.ID, ID: id})
	if err != nil {
		return Member{}, notFound(err, "member", id.String())
	}
	return memberFromRow(r.ID, r.UserID, r.Email, r.Role, r.CreatedAt, r.UpdatedAt), nil
}

func (s *Service) keepAnOwner(ctx context.Context, tx pgx.Tx, a Access) error {
	owners, err := tenantsdb.New(tx).LockOwners(ctx, a.Tenant.ID)
	if err != nil {
		return fmt.Errorf("count owners of %s: %w", a.Tenant.Slug, err)
	}
	if len(owners) <= 1 {
		return &ConflictError{Code: "last_owner", Message: "a tenant must keep at least one owner"}
	}
	return nil
}

func maxRole(a, b policy.Role) policy.Role {
	if a.AtLeast(b) {
		return a
	}
	return b
}

func normalizeEmail(s string) (string, error) {
	addr, err := mail.ParseAddress(strings.TrimSpace(s))
	if err != nil || addr.Name != "" || !strings.Contains(addr.Address, "@") {
		return "", &InvalidError{Field: "email", Message: "must be a plain email address"}
	}
	return strings.ToLower(addr.Address), nil
}
