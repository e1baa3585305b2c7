package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// TenantOut is a tenant on the wire.
type TenantOut struct {
	ID        string    `json:"id" format:"uuid" doc:"Tenant id."`
	Slug      string    `json:"slug" doc:"URL name of the tenant." example:"acme"`
	Name      string    `json:"name" doc:"Display name." example:"Acme Corp"`
	Status    string    `json:"status" enum:"active,suspended" doc:"Suspended tenants' keys and users are refused."`
	CreatedAt time.Time `json:"created_at" doc:"Creation time."`
	UpdatedAt time.Time `json:"updated_at" doc:"Last change."`
}

func tenantOut(t tenants.Tenant) TenantOut {
	return TenantOut{ID: t.ID.String(), Slug: t.Slug, Name: t.Name, Status: string(t.Status), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// TenantPath names the tenant in a path.
type TenantPath struct {
	Tenant string `path:"tenant" doc:"Tenant slug." example:"demo"`
}

// PageQuery is the cursor pagination every list takes.
type PageQuery struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Page size."`
	Cursor string `query:"cursor" maxLength:"200" doc:"Opaque cursor from the previous page's next_cursor."`
}

func (q PageQuery) page() tenants.Page { return tenants.Page{Limit: q.Limit, Cursor: q.Cursor} }

type tenantCreateIn struct {
	Body struct {
		Slug string `json:"slug" pattern:"^[a-z][a-z0-9-]{1,38}[a-z0-9]$" doc:"URL name: lowercase letters, digits and dashes, 3–40 characters." example:"acme"`
		Name string `json:"name" minLength:"1" maxLength:"100" doc:"Display name." example:"Acme Corp"`
	}
}

type tenantOutBody struct {
	Body TenantOut
}

type tenantListIn struct {
	PageQuery
}

type tenantListOut struct {
	Body struct {
		Tenants    []TenantOut `json:"tenants" doc:"The page of tenants."`
		NextCursor string      `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

type tenantUpdateIn struct {
	TenantPath
	Body struct {
		Name   *string `json:"name,omitempty" minLength:"1" maxLength:"100" doc:"New display name."`
		Status *string `json:"status,omitempty" enum:"active,suspended" doc:"Suspend or reactivate (platform admin only)."`
	}
}

func (s *Server) registerTenants(api huma.API) {
	create := op("tenant-create", http.MethodPost, "/v1/tenants", "Create a tenant", policy.TenantCreate, "Tenants")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *tenantCreateIn) (*tenantOutBody, error) {
		p, _ := policy.PrincipalFrom(ctx)
		t, err := s.deps.Tenants.CreateTenant(ctx, p, tenants.CreateTenantInput{Slug: in.Body.Slug, Name: in.Body.Name})
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &tenantOutBody{Body: tenantOut(t)}, nil
	})

	huma.Register(api, op("tenant-list", http.MethodGet, "/v1/tenants", "List the tenants you can see", policy.TenantList, "Tenants"),
		func(ctx context.Context, in *tenantListIn) (*tenantListOut, error) {
			p, _ := policy.PrincipalFrom(ctx)
			page, err := s.deps.Tenants.ListTenants(ctx, p, in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &tenantListOut{}
			out.Body.Tenants = make([]TenantOut, len(page.Tenants))
			for i, t := range page.Tenants {
				out.Body.Tenants[i] = tenantOut(t)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	huma.Register(api, op("tenant-get", http.MethodGet, "/v1/tenants/{tenant}", "Get a tenant", policy.TenantRead, "Tenants"),
		func(ctx context.Context, _ *TenantPath) (*tenantOutBody, error) {
			return &tenantOutBody{Body: tenantOut(accessFrom(ctx).Tenant)}, nil
		})

	huma.Register(api, op("tenant-update", http.MethodPatch, "/v1/tenants/{tenant}", "Rename, suspend or reactivate a tenant", policy.TenantUpdate, "Tenants"),
		func(ctx context.Context, in *tenantUpdateIn) (*tenantOutBody, error) {
			upd := tenants.UpdateTenantInput{Name: in.Body.Name}
			if in.Body.Status != nil {
				st := tenants.Status(*in.Body.Status)
				upd.Status = &st
			}
			t, err := s.deps.Tenants.UpdateTenant(ctx, accessFrom(ctx), upd)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return &tenantOutBody{Body: tenantOut(t)}, nil
		})

	del := op("tenant-delete", http.MethodDelete, "/v1/tenants/{tenant}", "Delete a tenant", policy.TenantDelete, "Tenants")
	del.DefaultStatus = http.StatusNoContent
	huma.Register(api, del, func(ctx context.Context, _ *TenantPath) (*struct{}, error) {
		if err := s.deps.Tenants.DeleteTenant(ctx, accessFrom(ctx)); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})
}
