-- Model endpoints and agent definitions: what a tenant configures before
-- it starts runs. Every query is scoped by tenant id.

-- name: LockModelDefault :exec
-- Serializes changes of a tenant's default endpoint: a row lock cannot stop
-- two transactions from each promoting a different endpoint, so both take
-- this transaction-scoped advisory lock first.
SELECT pg_advisory_xact_lock(hashtextextended('agentplane.model_default:' || CAST(sqlc.arg(tenant_id) AS uuid)::text, 0));

-- name: HasDefaultModel :one
SELECT EXISTS (SELECT 1 FROM model_endpoints WHERE tenant_id = @tenant_id AND is_default);

-- name: ClearDefaultModel :exec
UPDATE model_endpoints SET is_default = false, updated_at = now()
WHERE tenant_id = @tenant_id AND is_default AND id <> @keep_id;

-- name: CreateModel :one
INSERT INTO model_endpoints (tenant_id, id, name, base_url, model, api_key_secret, is_default,
                             context_window, supports_tools)
VALUES (@tenant_id, @id, @name, @base_url, @model, @api_key_secret, @is_default,
        @context_window, @supports_tools)
RETURNING *;

-- name: ListModels :many
SELECT * FROM model_endpoints
WHERE tenant_id = @tenant_id AND (sqlc.narg(after)::uuid IS NULL OR id > sqlc.narg(after))
ORDER BY id LIMIT @lim;

-- name: ModelByName :one
SELECT * FROM model_endpoints WHERE tenant_id = @tenant_id AND name = @name;

-- name: LockModel :one
-- FOR UPDATE: an update or delete holds the row so no agent starts using it
-- meanwhile (agents take it FOR SHARE, see ShareModel).
SELECT * FROM model_endpoints WHERE tenant_id = @tenant_id AND name = @name FOR UPDATE;

-- name: ShareModel :one
-- An agent naming an endpoint holds it FOR SHARE until it commits, so the
-- endpoint cannot be deleted between the check and the write.
SELECT * FROM model_endpoints WHERE tenant_id = @tenant_id AND name = @name FOR SHARE;

-- name: DefaultModel :one
SELECT * FROM model_endpoints WHERE tenant_id = @tenant_id AND is_default;

-- name: UpdateModel :one
UPDATE model_endpoints SET
    base_url = @base_url, model = @model, api_key_secret = @api_key_secret, is_default = @is_default,
    context_window = @context_window, supports_tools = @supports_tools, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: DeleteModel :execrows
DELETE FROM model_endpoints WHERE tenant_id = @tenant_id AND id = @id;

-- name: AgentsUsingModel :many
SELECT name FROM agents WHERE tenant_id = @tenant_id AND model = @model ORDER BY name LIMIT 5;

-- name: CreateAgent :one
INSERT INTO agents (tenant_id, id, name, model, instructions, tool_groups, skills, subagents,
                    max_turns, token_budget, timeout_seconds, webhook_url)
VALUES (@tenant_id, @id, @name, @model, @instructions, @tool_groups, @skills, @subagents,
        @max_turns, @token_budget, @timeout_seconds, sqlc.narg(webhook_url))
RETURNING *;

-- name: EnsureAgent :one
-- Creates the agent unless one of that name exists; no row back means it
-- did, so concurrent first uses create it exactly once.
INSERT INTO agents (tenant_id, id, name, max_turns, timeout_seconds)
VALUES (@tenant_id, @id, @name, @max_turns, @timeout_seconds)
ON CONFLICT (tenant_id, name) DO NOTHING
RETURNING *;

-- name: ListAgents :many
SELECT * FROM agents
WHERE tenant_id = @tenant_id AND (sqlc.narg(after)::uuid IS NULL OR id > sqlc.narg(after))
ORDER BY id LIMIT @lim;

-- name: AgentByName :one
SELECT * FROM agents WHERE tenant_id = @tenant_id AND name = @name;

-- name: LockAgent :one
SELECT * FROM agents WHERE tenant_id = @tenant_id AND name = @name FOR UPDATE;

-- name: UpdateAgent :one
UPDATE agents SET
    model = @model, instructions = @instructions, tool_groups = @tool_groups, skills = @skills,
    subagents = @subagents, max_turns = @max_turns, token_budget = @token_budget,
    timeout_seconds = @timeout_seconds, webhook_url = sqlc.narg(webhook_url), updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id
RETURNING *;

-- name: DeleteAgent :execrows
DELETE FROM agents WHERE tenant_id = @tenant_id AND id = @id;
