package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// AgentOut is an agent definition on the wire.
type AgentOut struct {
	ID             string    `json:"id" format:"uuid" doc:"Agent id."`
	Name           string    `json:"name" doc:"Name runs refer to the agent by." example:"support"`
	Model          *string   `json:"model" doc:"Model endpoint name; null means the tenant's default endpoint." example:"main"`
	Instructions   string    `json:"instructions" doc:"System instructions."`
	ToolGroups     []string  `json:"tool_groups" nullable:"false" doc:"Tool groups offered to the agent."`
	Skills         []string  `json:"skills" doc:"Skills the agent may use: null means every enabled skill, [] none."`
	Subagents      bool      `json:"subagents" doc:"Whether the agent may delegate to subagents (the task tool)."`
	MaxTurns       int       `json:"max_turns" doc:"Model calls per run at most." example:"50"`
	TokenBudget    *int64    `json:"token_budget" doc:"Tokens per run at most; null means no budget." example:"200000"`
	TimeoutSeconds int       `json:"timeout_seconds" doc:"Wall-clock limit of a run." example:"600"`
	WebhookURL     *string   `json:"webhook_url" doc:"Where results of runs that name no webhook_url are POSTed; null means nowhere." example:"https://example.com/hooks/agentplane"`
	CreatedAt      time.Time `json:"created_at" doc:"Creation time."`
	UpdatedAt      time.Time `json:"updated_at" doc:"Last change."`
}

func agentOut(a agent.Agent) AgentOut {
	return AgentOut{
		ID: a.ID.String(), Name: a.Name, Model: a.Model, Instructions: a.Instructions, ToolGroups: a.ToolGroups,
		Skills: a.Skills, Subagents: a.Subagents, MaxTurns: a.MaxTurns, TokenBudget: a.TokenBudget,
		TimeoutSeconds: a.TimeoutSeconds, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, WebhookURL: a.WebhookURL,
	}
}

type agentPath struct {
	TenantPath
	Agent string `path:"agent" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Agent name; \"default\" always exists." example:"default"`
}

type agentListIn struct {
	TenantPath
	PageQuery
}

type agentListOut struct {
	Body struct {
		Agents     []AgentOut `json:"agents" doc:"The page of agents, oldest first; the default agent is always among them."`
		NextCursor string     `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

// agentBodyMax leaves room for long instructions.
const agentBodyMax = 256 << 10

type agentCreateIn struct {
	TenantPath
	Body struct {
		Name           string    `json:"name" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Name runs refer to the agent by: lowercase letters, digits, '_' and '-'. Cannot change later." example:"support"`
		Model          *string   `json:"model,omitempty" nullable:"true" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Name of an existing model endpoint; omitted or null means the tenant's default." example:"main"`
		Instructions   string    `json:"instructions,omitempty" maxLength:"32768" doc:"System instructions." example:"You answer customer questions politely."`
		MaxTurns       int       `json:"max_turns,omitempty" minimum:"1" maximum:"1000" doc:"Model calls per run at most; 50 when omitted." example:"50"`
		Subagents      bool      `json:"subagents,omitempty" doc:"Whether the agent may delegate to subagents; false when omitted."`
		Skills         *[]string `json:"skills,omitempty" nullable:"true" maxItems:"100" uniqueItems:"true" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Skills the agent may use. Omitted or null: every enabled skill; []: none."`
		ToolGroups     []string  `json:"tool_groups,omitempty" nullable:"false" maxItems:"100" uniqueItems:"true" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Tool groups offered to the agent; none when omitted."`
		TokenBudget    *int64    `json:"token_budget,omitempty" nullable:"true" minimum:"1" doc:"Tokens per run at most; omitted or null means no budget." example:"200000"`
		TimeoutSeconds int       `json:"timeout_seconds,omitempty" minimum:"1" maximum:"86400" doc:"Wall-clock limit of a run; 600 when omitted." example:"600"`
		WebhookURL     *string   `json:"webhook_url,omitempty" nullable:"true" maxLength:"2048" doc:"Default webhook of the agent's runs (see delivery-list): https, or http to localhost only; no credentials. Omitted or null: none." example:"https://example.com/hooks/agentplane"`
	}
}

type agentOutBody struct {
	Body AgentOut
}

type agentUpdateIn struct {
	TenantPath
	Agent string `path:"agent" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"Agent name; \"default\" always exists." example:"default"`
	Body  struct {
		Model          Nullable[string]   `json:"model,omitempty" pattern:"^([a-z0-9][a-z0-9_-]{0,62})?$" doc:"Another endpoint's name; null (or \"\") means the tenant's default." example:"main"`
		Instructions   *string            `json:"instructions,omitempty" maxLength:"32768" doc:"New system instructions."`
		MaxTurns       *int               `json:"max_turns,omitempty" minimum:"1" maximum:"1000" doc:"Model calls per run at most." example:"20"`
		Subagents      *bool              `json:"subagents,omitempty" doc:"Whether the agent may delegate to subagents."`
		Skills         Nullable[[]string] `json:"skills,omitempty" maxItems:"100" uniqueItems:"true" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"null: every enabled skill; []: none; a list: those. Omit to leave alone."`
		ToolGroups     *[]string          `json:"tool_groups,omitempty" maxItems:"100" uniqueItems:"true" pattern:"^[a-z0-9][a-z0-9_-]{0,62}$" doc:"New tool groups."`
		TokenBudget    Nullable[int64]    `json:"token_budget,omitempty" minimum:"1" doc:"Tokens per run at most; null removes the budget." example:"200000"`
		TimeoutSeconds *int               `json:"timeout_seconds,omitempty" minimum:"1" maximum:"86400" doc:"Wall-clock limit of a run." example:"600"`
		WebhookURL     Nullable[string]   `json:"webhook_url,omitempty" maxLength:"2048" doc:"New default webhook; null (or \"\") removes it." example:"https://example.com/hooks/agentplane"`
	}
}

func (s *Server) registerAgents(api huma.API) {
	huma.Register(api, op("agent-list", http.MethodGet, "/v1/tenants/{tenant}/agents", "List agents", policy.AgentRead, "Agents"),
		func(ctx context.Context, in *agentListIn) (*agentListOut, error) {
			page, err := s.deps.Agents.ListAgents(ctx, accessFrom(ctx), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &agentListOut{}
			out.Body.Agents = make([]AgentOut, len(page.Agents))
			for i, a := range page.Agents {
				out.Body.Agents[i] = agentOut(a)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	create := op("agent-create", http.MethodPost, "/v1/tenants/{tenant}/agents", "Create an agent", policy.AgentWrite, "Agents")
	create.DefaultStatus = http.StatusCreated
	create.MaxBodyBytes = agentBodyMax
	huma.Register(api, create, func(ctx context.Context, in *agentCreateIn) (*agentOutBody, error) {
		b := in.Body
		ag := agent.AgentInput{
			Name: b.Name, Model: b.Model, Instructions: b.Instructions, ToolGroups: b.ToolGroups,
			Subagents: b.Subagents, MaxTurns: b.MaxTurns, TokenBudget: b.TokenBudget, TimeoutSeconds: b.TimeoutSeconds,
			WebhookURL: b.WebhookURL,
		}
		if b.Skills != nil {
			ag.Skills = *b.Skills
			if ag.Skills == nil {
				ag.Skills = []string{}
			}
		}
		a, err := s.deps.Agents.CreateAgent(ctx, accessFrom(ctx), ag)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &agentOutBody{Body: agentOut(a)}, nil
	})

	huma.Register(api, op("agent-get", http.MethodGet, "/v1/tenants/{tenant}/agents/{agent}", "Get an agent", policy.AgentRead, "Agents"),
		func(ctx context.Context, in *agentPath) (*agentOutBody, error) {
			a, err := s.deps.Agents.GetAgent(ctx, accessFrom(ctx), in.Agent)
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			return &agentOutBody{Body: agentOut(a)}, nil
		})

	update := op("agent-update", http.MethodPatch, "/v1/tenants/{tenant}/agents/{agent}", "Change an agent", policy.AgentWrite, "Agents")
	update.MaxBodyBytes = agentBodyMax
	huma.Register(api, update, func(ctx context.Context, in *agentUpdateIn) (*agentOutBody, error) {
		b := in.Body
		patch := agent.AgentPatch{
			Model: b.Model.orEmpty(), Instructions: b.Instructions, ToolGroups: b.ToolGroups, Subagents: b.Subagents,
			MaxTurns: b.MaxTurns, TokenBudget: b.TokenBudget.orEmpty(), TimeoutSeconds: b.TimeoutSeconds,
			WebhookURL: b.WebhookURL.orEmpty(),
		}
		if b.Skills.Sent {
			// A pointer to a nil list means every enabled skill; to an
			// empty one none (see agent.AgentPatch).
			skills := b.Skills.Value
			if !b.Skills.Null && skills == nil {
				skills = []string{}
			}
			patch.Skills = &skills
		}
		a, err := s.deps.Agents.UpdateAgent(ctx, accessFrom(ctx), in.Agent, patch)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &agentOutBody{Body: agentOut(a)}, nil
	})

	del := op("agent-delete", http.MethodDelete, "/v1/tenants/{tenant}/agents/{agent}", "Delete an agent", policy.AgentWrite, "Agents")
	del.DefaultStatus = http.StatusNoContent
	del.Description += " The default agent cannot be deleted (409 `default_agent`)."
	huma.Register(api, del, func(ctx context.Context, in *agentPath) (*struct{}, error) {
		if err := s.deps.Agents.DeleteAgent(ctx, accessFrom(ctx), in.Agent); err != nil {
			return nil, s.fail(ctx, err)
		}
		return nil, nil
	})
}
