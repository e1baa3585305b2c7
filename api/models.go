package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// ModelOut is a model endpoint on the wire.
type ModelOut struct {
	ID            string    `json:"id" format:"uuid" doc:"Endpoint id."`
	Name          string    `json:"name" doc:"Name agents refer to the endpoint by." example:"main"`
	BaseURL       string    `json:"base_url" doc:"Base URL of the OpenAI-compatible API." example:"https://api.openai.com/v1"`
	Model         string    `json:"model" doc:"Model id sent to the endpoint." example:"gpt-4o"`
	APIKeySecret  *string   `json:"api_key_secret" doc:"Name of the vault secret holding the API key; null when the endpoint needs none. The value is never returned." example:"OPENAI_API_KEY"`
	Default       bool      `json:"default" doc:"Whether this is the tenant's default endpoint, used by agents that name none."`
	ContextWindow int       `json:"context_window" doc:"Context window in tokens." example:"128000"`
	SupportsTools bool      `json:"supports_tools" doc:"Whether the model accepts tool definitions."`
	CreatedAt     time.Time `json:"created_at" doc:"Creation time."`
	UpdatedAt     time.Time `json:"updated_at" doc:"Last change."`
}

func modelOut(m agent.ModelEndpoint) ModelOut {
	return ModelOut{
		ID: m.ID.String(), Name: m.Name, BaseURL: m.BaseURL, Model: m.Model, APIKeySecret: m.APIKeySecret,
		Default: m.Default, ContextWindow: m.ContextWindow, SupportsTools: m.SupportsTools,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
}

type modelPath struct {
	TenantPath
	Model string `path:"model" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Endpoint name." example:"main"`
}

type modelListIn struct {
	TenantPath
	PageQuery
}

type modelListOut struct {
	Body struct {
		Models     []ModelOut `json:"models" doc:"The page of endpoints, oldest first."`
		NextCursor string     `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

type modelCreateIn struct {
	TenantPath
	Body struct {
		Name          string  `json:"name" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Name agents refer to the endpoint by: lowercase letters, digits, '_' and '-'. Cannot change later." example:"main"`
		BaseURL       string  `json:"base_url" format:"uri" maxLength:"2048" doc:"Absolute http(s) base URL of an OpenAI-compatible API, without credentials." example:"https://api.openai.com/v1"`
		Model         string  `json:"model" minLength:"1" maxLength:"200" doc:"Model id sent to the endpoint." example:"gpt-4o"`
		APIKeySecret  *string `json:"api_key_secret,omitempty" pattern:"^[A-Za-z_][A-Za-z0-9_]{0,127}$" doc:"Name of the vault secret holding the API key (PUT …/secrets/{name} first). Omit when the endpoint needs no key." example:"OPENAI_API_KEY"`
		Default       *bool   `json:"default,omitempty" doc:"Make this the tenant's default endpoint (the previous default loses the flag). When omitted, the endpoint becomes the default only if the tenant has none."`
		ContextWindow int     `json:"context_window,omitempty" minimum:"1" maximum:"100000000" doc:"Context window in tokens; 128000 when omitted." example:"128000"`
		SupportsTools *bool   `json:"supports_tools,omitempty" doc:"Whether the model accepts tool definitions; true when omitted."`
	}
}

type modelOutBody struct {
	Body ModelOut
}

type modelUpdateIn struct {
	TenantPath
	Model string `path:"model" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Endpoint name." example:"main"`
	Body  struct {
		BaseURL       *string          `json:"base_url,omitempty" format:"uri" maxLength:"2048" doc:"New base URL." example:"https://api.openai.com/v1"`
		Model         *string          `json:"model,omitempty" minLength:"1" maxLength:"200" doc:"New model id." example:"gpt-4.1"`
		APIKeySecret  Nullable[string] `json:"api_key_secret,omitempty" pattern:"^([A-Za-z_][A-Za-z0-9_]{0,127})?$" doc:"Another vault secret's name; null (or \"\") removes the key." example:"OPENAI_API_KEY"`
		Default       *bool            `json:"default,omitempty" doc:"true makes this the tenant's default (clearing the others); false leaves the tenant without a default."`
		ContextWindow *int             `json:"context_window,omitempty" minimum:"1" maximum:"100000000" doc:"New context window in tokens." example:"200000"`
		SupportsTools *bool            `json:"supports_tools,omitempty" doc:"Whether the model accepts tool definitions."`
	}
}

func (s *Server) registerModels(api huma.API) {
	huma.Register(api, op("model-list", http.MethodGet, "/v1/tenants/{tenant}/models", "List model endpoints", policy.ModelRead, "Models"),
		func(ctx context.Context, in *modelListIn) (*modelListOut, error) {
			page, err := s.deps.Agents.ListModels(ctx, accessFrom(ctx), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &modelListOut{}
			out.Body.Models = make([]ModelOut, len(page.Models))
			for i, m := range page.Models {
				out.Body.Models[i] = modelOut(m)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	create := op("model-create", http.MethodPost, "/v1/tenants/{tenant}/models", "Add a model endpoint", policy.ModelWrite, "Models")
	create.DefaultStatus = http.StatusCreated
	huma.Register(api, create, func(ctx context.Context, in *modelCreateIn) (*modelOutBody, error) {
		b := in.Body
		m, err := s.deps.Agents.CreateModel(ctx, accessFrom(ctx), agent.ModelInput{
			Name: b.Name, BaseURL: b.BaseURL, Model: b.Model, APIKeySecret: b.APIKeySecret,
			Default: b.Default, ContextWindow: b.ContextWindow, SupportsTools: b.SupportsTools,
		})
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &modelOutBody{Body: modelOut(m)}, nil
	})

	huma.Register(api, op("model-get", http.MethodGet, "/v1/tenants/{tenant}/models/{model}", "Get a model endpoint", policy.ModelRead, "Models"),
		func(ctx context.Context, in *modelPath) (*modelOutBody, error) {
			m, err := s.deps.Agents.GetModel(ctx, accessFrom(ctx), in.Model)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return &modelOutBody{Body: modelOut(m)}, nil
		})

	huma.Register(api, op("model-update", http.MethodPatch, "/v1/tenants/{tenant}/models/{model}", "Change a model endpoint", policy.ModelWrite, "Models"),
		func(ctx context.Context, in *modelUpdateIn) (*modelOutBody, error) {
			b := in.Body
			m, err := s.deps.Agents.UpdateModel(ctx, accessFrom(ctx), in.Model, agent.ModelPatch{
				BaseURL: b.BaseURL, Model: b.Model, APIKeySecret: b.APIKeySecret.orEmpty(),
				Default: b.Default, ContextWindow: b.ContextWindow, SupportsTools: b.SupportsTools,
			})
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return &modelOutBody{Body: modelOut(m)}, nil
		})

	del := op("model-delete", http.MethodDelete, "/v1/tenants/{tenant}/models/{model}", "Delete a model endpoint", policy.ModelWrite, "Models")
	del.DefaultStatus = http.StatusNoContent
	del.Description += " An endpoint an agent names cannot be deleted (409 `model_in_use`)."
	huma.Register(api, del, func(ctx context.Context, in *modelPath) (*struct{}, error) {
		if err := s.deps.Agents.DeleteModel(ctx, accessFrom(ctx), in.Model); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})
}

// Nullable is a PATCH body field that tells apart "absent" (leave alone),
// null (clear) and a value. Its schema is T's, made nullable; constraint
// tags on the field apply to T.
type Nullable[T any] struct {
	Sent  bool
	Null  bool
	Value T
}

// UnmarshalJSON records that the field was sent, and whether as null.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Sent = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// Schema is T's schema, nullable.
func (n Nullable[T]) Schema(r huma.Registry) *huma.Schema {
	s := r.Schema(reflect.TypeFor[T](), true, "")
	s.Nullable = true
	return s
}

// orEmpty maps a nullable string to the services' patch convention:
// nil = unchanged, "" = clear.
func (n Nullable[T]) orEmpty() *T {
	if !n.Sent {
		return nil
	}
	if n.Null {
		var zero T
		return &zero
	}
	return &n.Value
}
