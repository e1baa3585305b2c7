-- A thread's files: uploads into /mnt/user-data/uploads and the thread's
-- sandbox status. Every query is scoped by tenant id.

-- name: InsertUpload :one
INSERT INTO uploads (tenant_id, thread_id, id, name, size, content_type, sha256, created_by)
VALUES (@tenant_id, @thread_id, @id, @name, @size, @content_type, @sha256, @created_by)
RETURNING *;

-- name: ListUploads :many
SELECT * FROM uploads
WHERE tenant_id = @tenant_id AND thread_id = @thread_id
  AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before))
ORDER BY id DESC LIMIT @lim;

-- name: ThreadSandboxStatus :one
-- The sandbox id stored on the thread and, when its row is there, its state.
SELECT t.sandbox_id, s.status, s.provider, s.created_at, s.last_used_at
FROM threads t
LEFT JOIN sandboxes s ON s.tenant_id = t.tenant_id AND s.id = t.sandbox_id
WHERE t.tenant_id = @tenant_id AND t.id = @id AND t.deleted_at IS NULL;
