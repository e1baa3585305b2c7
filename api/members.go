package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// MemberOut is a membership on the wire.
type MemberOut struct {
	ID        string    `json:"id" format:"uuid" doc:"Membership id."`
	UserID    string    `json:"user_id" format:"uuid" doc:"The user's id."`
	Email     string    `json:"email" doc:"The user's email." example:"dev@example.com"`
	Role      string    `json:"role" enum:"owner,admin,developer,viewer" doc:"Role in this tenant."`
	CreatedAt time.Time `json:"created_at" doc:"When the user joined."`
	UpdatedAt time.Time `json:"updated_at" doc:"Last role change."`
}

func memberOut(m tenants.Member) MemberOut {
	return MemberOut{ID: m.ID.String(), UserID: m.UserID.String(), Email: m.Email, Role: string(m.Role), CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

type memberPath struct {
	TenantPath
	Member string `path:"member" format:"uuid" doc:"Membership id."`
}

type memberListIn struct {
	TenantPath
	PageQuery
}

type memberListOut struct {
	Body struct {
		Members    []MemberOut `json:"members" doc:"The page of members."`
		NextCursor string      `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

type memberCreateIn struct {
	TenantPath
	Body struct {
		Email    string  `json:"email" format:"email" maxLength:"254" doc:"Email of the user to add; the user is created when new." example:"dev@example.com"`
		Role     string  `json:"role" enum:"owner,admin,developer,viewer" doc:"Role to grant; at most your own." example:"developer"`
		Password *string `json:"password,omitempty" minLength:"10" maxLength:"72" writeOnly:"true" doc:"Console password, used only when the user is new. Never returned."`
	}
}

type memberOutBody struct {
	Body MemberOut
}

type memberUpdateIn struct {
	TenantPath
	Member string `path:"member" format:"uuid" doc:"Membership id."`
	Body   struct {
		Role string `json:"role" enum:"owner,admin,developer,viewer" doc:"New role; you must outrank both the old and the new role."`
	}
}

func (s *Server) registerMembers(api huma.API) {
	huma.Register(api, op("member-list", http.MethodGet, "/v1/tenants/{tenant}/members", "List members", policy.MemberRead, "Members"),
		func(ctx context.Context, in *memberListIn) (*memberListOut, error) {
			page, err := s.deps.Tenants.ListMembers(ctx, accessFrom(ctx), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &memberListOut{}
			out.Body.Members = make([]MemberOut, len(page.Members))
			for i, m := range page.Members {
				out.Body.Members[i] = memberOut(m)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	create := op("member-create", http.MethodPost, "/v1/tenants/{tenant}/members", "Add a member", policy.MemberWrite, "Members")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *memberCreateIn) (*memberOutBody, error) {
		m, err := s.deps.Tenants.AddMember(ctx, accessFrom(ctx), tenants.AddMemberInput{
			Email: in.Body.Email, Role: policy.Role(in.Body.Role), Password: in.Body.Password,
		})
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &memberOutBody{Body: memberOut(m)}, nil
	})

	huma.Register(api, op("member-update", http.MethodPatch, "/v1/tenants/{tenant}/members/{member}", "Change a member's role", policy.MemberWrite, "Members"),
		func(ctx context.Context, in *memberUpdateIn) (*memberOutBody, error) {
			m, err := s.deps.Tenants.UpdateMemberRole(ctx, accessFrom(ctx), uuid.MustParse(in.Member), policy.Role(in.Body.Role))
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return &memberOutBody{Body: memberOut(m)}, nil
		})

	del := op("member-delete", http.MethodDelete, "/v1/tenants/{tenant}/members/{member}", "Remove a member", policy.MemberWrite, "Members")
	del.DefaultStatus = http.StatusNoContent
	huma.Register(api, del, func(ctx context.Context, in *memberPath) (*struct{}, error) {
		if err := s.deps.Tenants.RemoveMember(ctx, accessFrom(ctx), uuid.MustParse(in.Member)); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})
}
