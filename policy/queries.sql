-- Storage for the Casbin adapter (adapter.go). The adapter derives tenant_id
-- from a rule's domain in one place, so every write passes the pair it chose.
-- Rows are read in id order: Casbin's priority effect depends on rule order.

-- name: ListRules :many
SELECT id, tenant_id, ptype, v0, v1, v2, v3, v4, v5
FROM casbin_rules
ORDER BY id;

-- name: ListRulesForTenant :many
-- One tenant's rules plus the platform-wide ones (tenant_id NULL). A NULL
-- argument matches no tenant, so it selects the platform-wide rules alone.
SELECT id, tenant_id, ptype, v0, v1, v2, v3, v4, v5
FROM casbin_rules
WHERE tenant_id = sqlc.narg(tenant_id) OR tenant_id IS NULL
ORDER BY id;

-- name: InsertRule :exec
-- Adding a rule that already exists is a no-op, so replicas racing to add the
-- same rule both succeed.
INSERT INTO casbin_rules (tenant_id, ptype, v0, v1, v2, v3, v4, v5)
VALUES (sqlc.narg(tenant_id), @ptype, @v0, @v1, @v2, @v3, @v4, @v5)
ON CONFLICT DO NOTHING;

-- name: DeleteRule :exec
DELETE FROM casbin_rules
WHERE tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)
  AND ptype = @ptype
  AND v0 = @v0 AND v1 = @v1 AND v2 = @v2
  AND v3 = @v3 AND v4 = @v4 AND v5 = @v5;

-- name: DeleteFilteredRules :many
-- Casbin's field filter: a NULL value leaves that column unconstrained.
DELETE FROM casbin_rules
WHERE ptype = @ptype
  AND (sqlc.narg(v0)::text IS NULL OR v0 = sqlc.narg(v0)::text)
  AND (sqlc.narg(v1)::text IS NULL OR v1 = sqlc.narg(v1)::text)
  AND (sqlc.narg(v2)::text IS NULL OR v2 = sqlc.narg(v2)::text)
  AND (sqlc.narg(v3)::text IS NULL OR v3 = sqlc.narg(v3)::text)
  AND (sqlc.narg(v4)::text IS NULL OR v4 = sqlc.narg(v4)::text)
  AND (sqlc.narg(v5)::text IS NULL OR v5 = sqlc.narg(v5)::text)
RETURNING id, tenant_id, ptype, v0, v1, v2, v3, v4, v5;

-- name: DeleteAllRules :exec
-- Only SavePolicy uses this, inside the transaction that writes the new set.
DELETE FROM casbin_rules;

-- name: DeleteTenantCapabilityRules :exec
-- Capability rules are "p" rules on the "use" action; replacing a tenant's
-- set deletes exactly those, in the caller's transaction.
DELETE FROM casbin_rules WHERE tenant_id = @tenant_id AND ptype = 'p' AND v3 = 'use';

-- name: TenantCapabilityRules :many
SELECT v0, v2, v4 FROM casbin_rules
WHERE tenant_id = @tenant_id AND ptype = 'p' AND v3 = 'use'
ORDER BY id;
