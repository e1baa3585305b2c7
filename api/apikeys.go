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

// APIKeyOut is a key's metadata on the wire; the secret is never in it.
type APIKeyOut struct {
	ID         string     `json:"id" format:"uuid" doc:"Key id."`
	Name       string     `json:"name" doc:"What the key is for." example:"ci"`
	Role       string     `json:"role" enum:"owner,admin,developer,viewer" doc:"The key's role in its tenant."`
	Prefix     string     `json:"prefix" doc:"Public part of the key, shown to tell keys apart." example:"k3x9q2m1ab"`
	CreatedBy  string     `json:"created_by" doc:"Principal that created the key."`
	CreatedAt  time.Time  `json:"created_at" doc:"Creation time."`
	ExpiresAt  *time.Time `json:"expires_at,omitempty" doc:"When the key stops working, if ever."`
	LastUsedAt *time.Time `json:"last_used_at,omitempty" doc:"Last authentication, to the minute."`
	RevokedAt  *time.Time `json:"revoked_at,omitempty" doc:"When the key was revoked."`
}

func apiKeyOut(k tenants.APIKey) APIKeyOut {
	return APIKeyOut{
		ID: k.ID.String(), Name: k.Name, Role: string(k.Role), Prefix: k.Prefix, CreatedBy: k.CreatedBy,
		CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt,
	}
}

// CreatedAPIKeyOut is the one response that carries the secret.
type CreatedAPIKeyOut struct {
	APIKeyOut
	Key string `json:"key" doc:"The full key. Shown only in this response; store it now." example:"ap_k3x9q2m1ab_0123456789abcdefghijklmnopqrstuvwxyz0123"`
}

type apiKeyListIn struct {
	TenantPath
	PageQuery
}

type apiKeyListOut struct {
	Body struct {
		APIKeys    []APIKeyOut `json:"api_keys" doc:"The page of keys, revoked ones included."`
		NextCursor string      `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

type apiKeyCreateIn struct {
	TenantPath
	Body struct {
		Name      string     `json:"name" minLength:"1" maxLength:"100" doc:"What the key is for." example:"ci"`
		Role      string     `json:"role" enum:"owner,admin,developer,viewer" doc:"The key's role; at most your own." example:"developer"`
		ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"Optional expiry, in the future."`
	}
}

type apiKeyCreateOut struct {
	Body CreatedAPIKeyOut
}

type apiKeyPath struct {
	TenantPath
	Key string `path:"key" format:"uuid" doc:"Key id."`
}

func (s *Server) registerAPIKeys(api huma.API) {
	huma.Register(api, op("apikey-list", http.MethodGet, "/v1/tenants/{tenant}/api-keys", "List API keys", policy.APIKeyRead, "API keys"),
		func(ctx context.Context, in *apiKeyListIn) (*apiKeyListOut, error) {
			page, err := s.deps.Tenants.ListAPIKeys(ctx, accessFrom(ctx), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &apiKeyListOut{}
			out.Body.APIKeys = make([]APIKeyOut, len(page.Keys))
			for i, k := range page.Keys {
				out.Body.APIKeys[i] = apiKeyOut(k)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	create := op("apikey-create", http.MethodPost, "/v1/tenants/{tenant}/api-keys", "Create an API key", policy.APIKeyWrite, "API keys")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *apiKeyCreateIn) (*apiKeyCreateOut, error) {
		k, err := s.deps.Tenants.CreateAPIKey(ctx, accessFrom(ctx), tenants.CreateAPIKeyInput{
			Name: in.Body.Name, Role: policy.Role(in.Body.Role), ExpiresAt: in.Body.ExpiresAt,
		})
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &apiKeyCreateOut{Body: CreatedAPIKeyOut{APIKeyOut: apiKeyOut(k.APIKey), Key: k.Key}}, nil
	})

	del := op("apikey-delete", http.MethodDelete, "/v1/tenants/{tenant}/api-keys/{key}", "Revoke an API key", policy.APIKeyWrite, "API keys")
	del.DefaultStatus = http.StatusNoContent
	huma.Register(api, del, func(ctx context.Context, in *apiKeyPath) (*struct{}, error) {
		if _, err := s.deps.Tenants.RevokeAPIKey(ctx, accessFrom(ctx), uuid.MustParse(in.Key)); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})
}
