-- name: CreateThread :one
INSERT INTO threads (tenant_id, id, title, created_by) VALUES (@tenant_id, @id, @title, @created_by)
RETURNING *;

-- name: ThreadByID :one
SELECT * FROM threads WHERE tenant_id = @tenant_id AND id = @id AND deleted_at IS NULL;

-- name: ListThreads :many
SELECT * FROM threads
WHERE tenant_id = @tenant_id AND deleted_at IS NULL
  AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before))
ORDER BY id DESC LIMIT @lim;

-- name: DeleteThread :execrows
UPDATE threads SET deleted_at = now(), updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND deleted_at IS NULL;

-- name: ThreadHasActiveRun :one
SELECT EXISTS (SELECT 1 FROM runs WHERE tenant_id = @tenant_id AND thread_id = @thread_id AND status IN ('queued', 'running'));

-- name: CreateRun :one
INSERT INTO runs (tenant_id, id, thread_id, agent_id, agent_name, principal_kind, principal_id, principal_role,
                  input, metadata, idempotency_key, request_hash, webhook_url)
VALUES (@tenant_id, @id, @thread_id, @agent_id, @agent_name, @principal_kind, @principal_id, @principal_role,
        @input, @metadata, @idempotency_key, @request_hash, sqlc.narg(webhook_url))
RETURNING *;

-- name: RunByID :one
SELECT * FROM runs WHERE tenant_id = @tenant_id AND id = @id;

-- name: RunByIdempotencyKey :one
SELECT * FROM runs WHERE tenant_id = @tenant_id AND idempotency_key = @idempotency_key;

-- name: ListRuns :many
SELECT * FROM runs
WHERE tenant_id = @tenant_id
  AND (sqlc.narg(thread_id)::uuid IS NULL OR thread_id = sqlc.narg(thread_id))
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(before)::uuid IS NULL OR id < sqlc.narg(before))
ORDER BY id DESC LIMIT @lim;

-- name: CancelQueuedRun :one
-- A queued run is cancelled at once and never starts (the claim requires
-- status queued, so this and a claim cannot both win).
UPDATE runs SET status = 'cancelled', stop_reason = 'cancelled', cancel_requested = true,
    finished_at = now(), updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND status = 'queued'
RETURNING *;

-- name: RequestCancel :one
UPDATE runs SET cancel_requested = true, updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND status = 'running'
RETURNING *;

-- name: ClaimRun :one
-- Takes (or, after expiry, takes over) the run's lease with a new epoch.
-- Runs of one thread start in creation order (ids are UUIDv7), one at a time.
UPDATE runs r SET status = 'running', lease_owner = @owner, lease_epoch = r.lease_epoch + 1,
    lease_expires_at = now() + make_interval(secs => @ttl_seconds::float8),
    started_at = coalesce(r.started_at, now()), updated_at = now()
WHERE r.tenant_id = @tenant_id AND r.id = @id
  AND (r.status = 'queued' OR (r.status = 'running' AND r.lease_expires_at < now()))
  AND NOT EXISTS (
      SELECT 1 FROM runs o
      WHERE o.tenant_id = r.tenant_id AND o.thread_id = r.thread_id AND o.id < r.id
        AND o.status IN ('queued', 'running'))
RETURNING *;

-- name: Heartbeat :one
UPDATE runs SET lease_expires_at = now() + make_interval(secs => @ttl_seconds::float8)
WHERE tenant_id = @tenant_id AND id = @id AND lease_epoch = @epoch AND status = 'running'
RETURNING cancel_requested;

-- name: FenceRun :one
-- Every write transaction of a worker starts here: it locks the run row and
-- proves the caller still holds the lease epoch.
SELECT * FROM runs
WHERE tenant_id = @tenant_id AND id = @id AND lease_epoch = @epoch AND status = 'running'
FOR UPDATE;

-- name: AdvanceRun :exec
UPDATE runs SET turns = @turns, input_tokens = input_tokens + @input_tokens,
    output_tokens = output_tokens + @output_tokens, total_tokens = total_tokens + @total_tokens,
    updated_at = now()
WHERE tenant_id = @tenant_id AND id = @id AND lease_epoch = @epoch;

-- name: FinishRun :one
UPDATE runs SET status = @status, stop_reason = sqlc.narg(stop_reason), error = sqlc.narg(error),
    finished_at = now(), updated_at = now(), lease_expires_at = NULL
WHERE tenant_id = @tenant_id AND id = @id AND lease_epoch = @epoch AND status = 'running'
RETURNING *;

-- name: ExpiredRuns :many
-- Runs whose worker stopped heartbeating; the reaper re-enqueues them.
SELECT tenant_id, id FROM runs
WHERE status = 'running' AND lease_expires_at < now()
ORDER BY lease_expires_at LIMIT @lim;

-- name: QueuedRunsWithoutJob :many
SELECT tenant_id, id FROM runs WHERE status = 'queued' AND created_at < now() - interval '1 minute'
ORDER BY created_at LIMIT @lim;

-- name: AppendEvent :one
-- Takes the run's next sequence number, stores the event and notifies
-- listeners (at commit) in one round trip. A worker passes its epoch so a
-- fenced-out worker cannot add events; the API passes NULL.
WITH next AS (
    UPDATE runs SET event_seq = runs.event_seq + 1
    WHERE runs.tenant_id = @tenant_id AND runs.id = @run_id
      AND (sqlc.narg(epoch)::bigint IS NULL OR runs.lease_epoch = sqlc.narg(epoch))
    RETURNING runs.event_seq, runs.tenant_id AS ev_tenant, runs.id AS ev_run
), ins AS (
    INSERT INTO run_events (tenant_id, run_id, seq, type, data)
    SELECT next.ev_tenant, next.ev_run, next.event_seq, @type, @data FROM next
    RETURNING run_events.seq, run_events.created_at,
        pg_notify('agentplane_run_events', run_events.tenant_id::text || ':' || run_events.run_id::text || ':' || run_events.seq::text) IS NULL AS notified
)
SELECT ins.seq, ins.created_at FROM ins;

-- name: ListEvents :many
SELECT seq, type, data, created_at FROM run_events
WHERE tenant_id = @tenant_id AND run_id = @run_id AND seq > @after
ORDER BY seq LIMIT @lim;

-- name: ThreadMessages :many
SELECT * FROM messages WHERE tenant_id = @tenant_id AND thread_id = @thread_id
  AND seq > @after
ORDER BY seq LIMIT @lim;

-- name: AllThreadMessages :many
SELECT * FROM messages WHERE tenant_id = @tenant_id AND thread_id = @thread_id ORDER BY seq;

-- name: InsertMessage :execrows
-- Idempotent per (run, step, idx): a resumed run that replays a step
-- writes nothing twice.
INSERT INTO messages (tenant_id, thread_id, seq, run_id, step, idx, role, content, tool_calls, tool_call_id, tool_name)
SELECT @tenant_id, @thread_id,
       coalesce((SELECT max(seq) FROM messages WHERE tenant_id = @tenant_id AND thread_id = @thread_id), 0) + 1,
       @run_id, @step, @idx, @role, @content, @tool_calls, sqlc.narg(tool_call_id), sqlc.narg(tool_name)
ON CONFLICT (tenant_id, run_id, step, idx) DO NOTHING;
