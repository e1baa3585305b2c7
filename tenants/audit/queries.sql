-- Queries of the tenant audit log. Every statement is scoped by tenant_id
-- except ListAuditedTenants, which only Verify's all-tenant sweep uses.

-- name: EnsureHead :exec
-- Creates the tenant's head at seq 0 before its first event. A concurrent
-- creator waits on the primary key and then does nothing, so both callers go
-- on to lock the same row.
INSERT INTO audit_heads (tenant_id, seq, hash)
VALUES (@tenant_id, 0, @genesis_hash)
ON CONFLICT (tenant_id) DO NOTHING;

-- name: LockHead :one
-- Serializes appends to one tenant's chain until the caller's transaction ends.
SELECT seq, hash FROM audit_heads
WHERE tenant_id = @tenant_id
FOR UPDATE;

-- name: InsertEvent :exec
INSERT INTO audit_events (
    tenant_id, seq, id, actor_kind, actor_id, action, target_kind, target_id,
    request_id, diff, created_at, prev_hash, hash
) VALUES (
    @tenant_id, @seq, @id, @actor_kind, @actor_id, @action, @target_kind, @target_id,
    @request_id, @diff, @created_at, @prev_hash, @hash
);

-- name: UpdateHead :exec
UPDATE audit_heads SET seq = @seq, hash = @hash
WHERE tenant_id = @tenant_id;

-- name: GetHead :one
SELECT seq, hash FROM audit_heads
WHERE tenant_id = @tenant_id;

-- name: ListEvents :many
-- Newest first. A NULL filter matches everything; before_seq is the cursor.
SELECT seq, id, actor_kind, actor_id, action, target_kind, target_id,
       request_id, diff, created_at, hash
FROM audit_events
WHERE tenant_id = @tenant_id
  AND (sqlc.narg('before_seq')::bigint IS NULL OR seq < sqlc.narg('before_seq')::bigint)
  AND (sqlc.narg('action')::text IS NULL OR action = sqlc.narg('action')::text)
  AND (sqlc.narg('action_prefix')::text IS NULL OR starts_with(action, sqlc.narg('action_prefix')::text))
  AND (sqlc.narg('actor_id')::text IS NULL OR actor_id = sqlc.narg('actor_id')::text)
  AND (sqlc.narg('target_kind')::text IS NULL OR target_kind = sqlc.narg('target_kind')::text)
  AND (sqlc.narg('target_id')::text IS NULL OR target_id = sqlc.narg('target_id')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR created_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR created_at < sqlc.narg('until')::timestamptz)
ORDER BY seq DESC
LIMIT sqlc.arg('max_rows');

-- name: ListChain :many
-- One batch of a tenant's chain in append order, for Verify.
SELECT tenant_id, seq, id, actor_kind, actor_id, action, target_kind, target_id,
       request_id, diff, created_at, prev_hash, hash
FROM audit_events
WHERE tenant_id = @tenant_id AND seq > @after_seq
ORDER BY seq
LIMIT sqlc.arg('max_rows');

-- name: ListAuditedTenants :many
-- Tenants with a head or any event: a chain whose head was deleted must
-- still be checked.
SELECT tenant_id FROM audit_heads
UNION
SELECT tenant_id FROM audit_events
ORDER BY tenant_id;
