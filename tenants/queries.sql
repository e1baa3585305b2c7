-- name: CreateTenant :one
INSERT INTO tenants (id, slug, name) VALUES (@id, @slug, @name)
RETURNING *;

-- name: TenantBySlug :one
SELECT * FROM tenants WHERE slug = @slug AND deleted_at IS NULL;

-- name: TenantByID :one
SELECT * FROM tenants WHERE id = @id AND deleted_at IS NULL;

-- name: ListAllTenants :many
SELECT * FROM tenants
WHERE deleted_at IS NULL AND (sqlc.narg(after)::uuid IS NULL OR id > sqlc.narg(after))
ORDER BY id LIMIT @lim;

-- name: ListUserTenants :many
SELECT t.* FROM tenants t JOIN memberships m ON m.tenant_id = t.id
WHERE m.user_id = @user_id AND t.deleted_at IS NULL
  AND (sqlc.narg(after)::uuid IS NULL OR t.id > sqlc.narg(after))
ORDER BY t.id LIMIT @lim;

-- name: UpdateTenant :one
UPDATE tenants SET
    name = coalesce(sqlc.narg(name), name),
    status = coalesce(sqlc.narg(status), status),
    updated_at = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- name: DeleteTenant :execrows
UPDATE tenants SET deleted_at = now(), updated_at = now()
WHERE id = @id AND deleted_at IS NULL;

-- name: CreateUser :one
-- Two tenants inviting the same new email at once both succeed: the loser
-- of the race gets no row back and reads the winner's.
INSERT INTO users (id, email, password_hash, platform_admin)
VALUES (@id, @email, @password_hash, @platform_admin)
ON CONFLICT ((lower(email))) DO NOTHING
RETURNING *;

-- name: UserByEmail :one
SELECT * FROM users WHERE lower(email) = lower(@email);

-- name: UserByID :one
SELECT * FROM users WHERE id = @id;

-- name: SetUserPassword :exec
UPDATE users SET password_hash = @password_hash WHERE id = @id;

-- name: SetUserPlatformAdmin :exec
UPDATE users SET platform_admin = @platform_admin WHERE id = @id;

-- name: MembershipRole :one
SELECT role FROM memberships WHERE tenant_id = @tenant_id AND user_id = @user_id;

-- name: CreateMembership :one
INSERT INTO memberships (tenant_id, id, user_id, role)
VALUES (@tenant_id, @id, @user_id, @role)
RETURNING *;

-- name: ListMembers :many
SELECT m.id, m.user_id, u.email, m.role, m.created_at, m.updated_at
FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.tenant_id = @tenant_id AND (sqlc.narg(after)::uuid IS NULL OR m.id > sqlc.narg(after))
ORDER BY m.id LIMIT @lim;

-- name: MemberByID :one
SELECT m.id, m.user_id, u.email, m.role, m.created_at, m.updated_at
FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.tenant_id = @tenant_id AND m.id = @id;

-- name: LockOwners :many
-- Locks the tenant's owner rows so "never remove the last owner" holds under
-- concurrent changes.
SELECT id FROM memberships WHERE tenant_id = @tenant_id AND role = 'owner' FOR UPDATE;

-- name: UpdateMemberRole :execrows
UPDATE memberships SET role = @role, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id;

-- name: DeleteMember :execrows
DELETE FROM memberships WHERE tenant_id = @tenant_id AND id = @id;

-- name: CreateAPIKey :one
INSERT INTO api_keys (tenant_id, id, name, role, prefix, secret_hash, created_by, expires_at)
VALUES (@tenant_id, @id, @name, @role, @prefix, @secret_hash, @created_by, @expires_at)
RETURNING *;

-- name: ListAPIKeys :many
SELECT * FROM api_keys
WHERE tenant_id = @tenant_id AND (sqlc.narg(after)::uuid IS NULL OR id > sqlc.narg(after))
ORDER BY id LIMIT @lim;

-- name: APIKeyByID :one
SELECT * FROM api_keys WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: RevokeAPIKey :one
UPDATE api_keys SET revoked_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND revoked_at IS NULL
RETURNING *;

-- name: APIKeyForAuth :one
-- Authentication knows only the key's prefix, so this is the one lookup that
-- cannot start from a tenant id; the tenant comes back with the key.
SELECT k.tenant_id, k.id, k.name, k.role, k.secret_hash, k.expires_at, k.revoked_at,
       t.status AS tenant_status
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id AND t.deleted_at IS NULL
WHERE k.prefix = @prefix;

-- name: TouchAPIKey :exec
UPDATE api_keys SET last_used_at = now()
WHERE tenant_id = @tenant_id AND id = @id
  AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: CreateSession :exec
INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at)
VALUES (@token_hash, @user_id, @csrf_token, @expires_at);

-- name: SessionByToken :one
SELECT s.csrf_token, s.expires_at, u.id AS user_id, u.email, u.platform_admin
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.token_hash = @token_hash AND s.expires_at > now();

-- name: DeleteSession :exec
DELETE FROM sessions WHERE token_hash = @token_hash;

-- name: DeleteExpiredSessions :execrows
DELETE FROM sessions WHERE expires_at <= now();

-- name: APIKeyStanding :one
SELECT k.role, k.expires_at, k.revoked_at, t.status AS tenant_status
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id AND t.deleted_at IS NULL
WHERE k.tenant_id = @tenant_id AND k.id = @id;
