package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// SecretOut is a secret's metadata on the wire; its value is never in it.
type SecretOut struct {
	Name        string    `json:"name" doc:"Secret name." example:"OPENAI_API_KEY"`
	Version     int       `json:"version" minimum:"1" doc:"Current version; every put adds one, older versions are kept." example:"2"`
	Fingerprint string    `json:"fingerprint" doc:"Keyed fingerprint of the current value: equal values in one tenant have equal fingerprints. It reveals nothing about the value." example:"sha256:3f9a0c21b7de"`
	UpdatedAt   time.Time `json:"updated_at" doc:"When the current version was written."`
}

func secretOut(m secrets.Metadata) SecretOut {
	return SecretOut{Name: m.Name, Version: m.Version, Fingerprint: m.Fingerprint, UpdatedAt: m.UpdatedAt}
}

type secretListIn struct {
	TenantPath
	PageQuery
}

type secretListOut struct {
	Body struct {
		Secrets    []SecretOut `json:"secrets" doc:"The page of secrets, in name order."`
		NextCursor string      `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

// SecretPath names a secret in a path.
type SecretPath struct {
	TenantPath
	Name string `path:"name" pattern:"^[A-Za-z_][A-Za-z0-9_]{0,127}$" doc:"Secret name: a letter or underscore, then up to 127 letters, digits or underscores (usable as an environment variable name). Case-sensitive." example:"OPENAI_API_KEY"`
}

type secretPutIn struct {
	SecretPath
	Body struct {
		Value string `json:"value" minLength:"1" maxLength:"65536" writeOnly:"true" doc:"The secret value, at most 64 KiB. Write-only: no response, list or log ever returns it; agents receive it at run time." example:"sk-example-0123456789"`
	}
}

type secretPutOut struct {
	Body SecretOut
}

// secretPutMaxBody leaves room for a 64 KiB value with JSON escaping.
const secretPutMaxBody = 512 << 10

func (s *Server) registerSecrets(api huma.API) {
	huma.Register(api, op("secret-list", http.MethodGet, "/v1/tenants/{tenant}/secrets", "List secrets", policy.SecretRead, "Secrets"),
		func(ctx context.Context, in *secretListIn) (*secretListOut, error) {
			if s.deps.Secrets == nil {
				return nil, s.secretsUnavailable(ctx)
			}
			page, err := s.deps.Secrets.List(ctx, accessFrom(ctx), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &secretListOut{}
			out.Body.Secrets = make([]SecretOut, len(page.Secrets))
			for i, m := range page.Secrets {
				out.Body.Secrets[i] = secretOut(m)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	put := op("secret-put", http.MethodPut, "/v1/tenants/{tenant}/secrets/{name}", "Create or rotate a secret", policy.SecretWrite, "Secrets")
	put.Description += " Stores the value as the secret's next version (1 for a new name); older versions are kept. The value is write-only: the response, like every other, carries only metadata."
	put.MaxBodyBytes = secretPutMaxBody
	huma.Register(api, put, func(ctx context.Context, in *secretPutIn) (*secretPutOut, error) {
		if s.deps.Secrets == nil {
			return nil, s.secretsUnavailable(ctx)
		}
		m, err := s.deps.Secrets.Put(ctx, accessFrom(ctx), in.Name, in.Body.Value)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &secretPutOut{Body: secretOut(m)}, nil
	})

	del := op("secret-delete", http.MethodDelete, "/v1/tenants/{tenant}/secrets/{name}", "Delete a secret", policy.SecretWrite, "Secrets")
	del.Description += " Removes every version of the secret."
	del.DefaultStatus = http.StatusNoContent
	huma.Register(api, del, func(ctx context.Context, in *SecretPath) (*struct{}, error) {
		if s.deps.Secrets == nil {
			return nil, s.secretsUnavailable(ctx)
		}
		if err := s.deps.Secrets.Delete(ctx, accessFrom(ctx), in.Name); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})
}

// secretsUnavailable answers when the process runs without a vault.
func (s *Server) secretsUnavailable(ctx context.Context) error {
	return s.fail(ctx, newProblem(http.StatusServiceUnavailable, "secrets_unavailable", "this server has no secrets vault configured"))
}
