-- name: LockThread :one
-- Serializes changes to a thread's artifact list (seq = max + 1).
SELECT id FROM threads WHERE tenant_id = @tenant_id AND id = @id AND deleted_at IS NULL FOR UPDATE;

-- name: AddArtifact :execrows
-- Appends a path to the thread's list unless it is already there.
INSERT INTO artifacts (tenant_id, thread_id, seq, path, run_id)
SELECT @tenant_id, @thread_id, coalesce(max(a.seq), 0) + 1, @path, @run_id
FROM artifacts a WHERE a.tenant_id = @tenant_id AND a.thread_id = @thread_id
ON CONFLICT (tenant_id, thread_id, path) DO NOTHING;

-- name: ListArtifacts :many
SELECT path FROM artifacts WHERE tenant_id = @tenant_id AND thread_id = @thread_id ORDER BY seq;
