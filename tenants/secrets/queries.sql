-- Queries of the secrets vault. Every statement is scoped by tenant_id except
-- NewestDataKey, which only CheckMasterKey uses to test the master key.

-- name: CreateDataKey :exec
-- A concurrent first use waits on the primary key and then does nothing, so
-- both callers go on to read (and lock) the same row.
INSERT INTO tenant_data_keys (tenant_id, wrapped_key)
VALUES (@tenant_id, @wrapped_key)
ON CONFLICT (tenant_id) DO NOTHING;

-- name: LockDataKey :one
-- Serializes a tenant's secret writes until the caller's transaction ends,
-- so "next version = last + 1" cannot race.
SELECT wrapped_key FROM tenant_data_keys
WHERE tenant_id = @tenant_id
FOR UPDATE;

-- name: DataKey :one
SELECT wrapped_key FROM tenant_data_keys
WHERE tenant_id = @tenant_id;

-- name: NewestDataKey :one
SELECT tenant_id, wrapped_key FROM tenant_data_keys
ORDER BY created_at DESC
LIMIT 1;

-- name: LastVersion :one
SELECT coalesce(max(version), 0)::integer AS version FROM secrets
WHERE tenant_id = @tenant_id AND name = @name;

-- name: InsertSecret :one
INSERT INTO secrets (tenant_id, name, version, ciphertext, fingerprint, created_by)
VALUES (@tenant_id, @name, @version, @ciphertext, @fingerprint, @created_by)
RETURNING name, version, fingerprint, created_at;

-- name: LatestSecret :one
SELECT version, ciphertext FROM secrets
WHERE tenant_id = @tenant_id AND name = @name
ORDER BY version DESC
LIMIT 1;

-- name: ListSecrets :many
-- The newest version of each name, in name order after the cursor.
SELECT DISTINCT ON (name) name, version, fingerprint, created_at FROM secrets
WHERE tenant_id = @tenant_id
  AND (sqlc.narg(after)::text IS NULL OR name > sqlc.narg(after)::text)
ORDER BY name, version DESC
LIMIT @lim;

-- name: DeleteSecret :execrows
-- Every version goes: rotation history is not kept past a delete.
DELETE FROM secrets
WHERE tenant_id = @tenant_id AND name = @name;
