-- name: LiveSandbox :one
-- The thread's sandbox that has not been destroyed (at most one, by index).
SELECT * FROM sandboxes
WHERE tenant_id = @tenant_id AND thread_id = @thread_id AND status <> 'destroyed';

-- name: LockThreadSandbox :one
-- Locks the thread row for the transaction that records its sandbox and
-- returns the id recorded so far.
SELECT sandbox_id FROM threads
WHERE tenant_id = @tenant_id AND id = @thread_id
FOR UPDATE;

-- name: ClaimSandbox :one
-- Takes (or renews) the ownership lease of a live sandbox; another owner's
-- unexpired lease makes it return no row. Any use makes it active again.
UPDATE sandboxes SET status = 'active', lease_owner = @owner::text,
    lease_expires_at = now() + make_interval(secs => @ttl_seconds::float8), last_used_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND status <> 'destroyed'
  AND (lease_owner IS NULL OR lease_owner = @owner::text OR lease_expires_at < now())
RETURNING *;

-- name: InsertSandbox :one
-- Records a freshly acquired sandbox, leased to its acquirer. A provider
-- that hands out the same id again after a destroy revives the old row.
-- Another live sandbox of the thread fails the live-per-thread index.
INSERT INTO sandboxes (tenant_id, id, thread_id, provider, status, lease_owner, lease_expires_at)
VALUES (@tenant_id, @id, @thread_id, @provider, 'active', @owner::text, now() + make_interval(secs => @ttl_seconds::float8))
ON CONFLICT (tenant_id, id) DO UPDATE
SET status = 'active', lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
    provider = excluded.provider, last_used_at = now(), destroyed_at = NULL
WHERE sandboxes.status = 'destroyed' AND sandboxes.thread_id = excluded.thread_id
RETURNING *;

-- name: SetThreadSandbox :execrows
-- Stores the sandbox id on the thread, only over no id or a destroyed one:
-- a live sandbox's id is never overwritten.
UPDATE threads t SET sandbox_id = @sandbox_id::text
WHERE t.tenant_id = @tenant_id AND t.id = @thread_id
  AND (t.sandbox_id IS NULL OR t.sandbox_id = @sandbox_id::text OR NOT EXISTS (
      SELECT 1 FROM sandboxes s
      WHERE s.tenant_id = t.tenant_id AND s.id = t.sandbox_id AND s.status <> 'destroyed'));

-- name: ReleaseSandbox :execrows
-- Ends the caller's lease: the sandbox goes idle and its idle clock starts.
UPDATE sandboxes SET status = 'idle', lease_owner = NULL, lease_expires_at = NULL, last_used_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND lease_owner = @owner::text AND status <> 'destroyed';

-- name: ReapableSandboxes :many
-- Sandboxes unused for longer than the idle timeout and driven by nobody:
-- idle ones, and active ones whose owner's lease ran out (a dead worker).
-- The reaper scans all tenants; every change it makes is tenant-scoped.
SELECT tenant_id, id FROM sandboxes
WHERE status <> 'destroyed' AND last_used_at < now() - make_interval(secs => @idle_seconds::float8)
  AND (lease_owner IS NULL OR lease_expires_at < now())
ORDER BY last_used_at LIMIT @lim;

-- name: ClaimForReap :one
-- Leases a sandbox to the reaper if it is still reapable, so no worker
-- drives it while it is destroyed.
UPDATE sandboxes SET lease_owner = @owner::text, lease_expires_at = now() + make_interval(secs => @ttl_seconds::float8)
WHERE tenant_id = @tenant_id AND id = @id AND status <> 'destroyed'
  AND last_used_at < now() - make_interval(secs => @idle_seconds::float8)
  AND (lease_owner IS NULL OR lease_expires_at < now())
RETURNING *;

-- name: MarkDestroyed :execrows
-- Records a destroy by the lease holder.
UPDATE sandboxes SET status = 'destroyed', destroyed_at = now(), lease_owner = NULL, lease_expires_at = NULL
WHERE tenant_id = @tenant_id AND id = @id AND lease_owner = @owner::text AND status <> 'destroyed';

-- name: DropLease :execrows
-- Gives a lease back without other changes (a destroy that failed).
UPDATE sandboxes SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant_id = @tenant_id AND id = @id AND lease_owner = @owner::text;

-- name: SandboxByID :one
SELECT * FROM sandboxes WHERE tenant_id = @tenant_id AND id = @id;
