-- Webhook deliveries of run results (agent/delivery.go). Every query is
-- scoped by tenant id.

-- name: CreateDelivery :one
-- One delivery per run and URL: a second insert returns no row, so a
-- terminal status written twice cannot enqueue a second delivery.
INSERT INTO deliveries (tenant_id, id, run_id, url)
VALUES (@tenant_id, @id, @run_id, @url)
ON CONFLICT (tenant_id, run_id, url) DO NOTHING
RETURNING *;

-- name: DeliveryByID :one
SELECT * FROM deliveries WHERE tenant_id = @tenant_id AND id = @id;

-- name: RecordDeliveryAttempt :one
-- Counts an attempt and sets the delivery's outcome, only while it is
-- pending: an attempt that lost a race to a finished delivery changes nothing.
UPDATE deliveries SET
    attempts = attempts + 1,
    status = @status,
    last_status_code = sqlc.narg(status_code),
    last_error = sqlc.narg(error),
    delivered_at = CASE WHEN @status::text = 'delivered' THEN now() END
WHERE tenant_id = @tenant_id AND id = @id AND status = 'pending'
RETURNING *;

-- name: InsertDeliveryAttempt :exec
INSERT INTO delivery_attempts (tenant_id, delivery_id, attempt, status_code, error, duration_ms)
VALUES (@tenant_id, @delivery_id, @attempt, sqlc.narg(status_code), sqlc.narg(error), @duration_ms);

-- name: ListRunDeliveries :many
SELECT * FROM deliveries WHERE tenant_id = @tenant_id AND run_id = @run_id ORDER BY id;

-- name: ListRunDeliveryAttempts :many
SELECT a.* FROM delivery_attempts a
JOIN deliveries d ON d.tenant_id = a.tenant_id AND d.id = a.delivery_id
WHERE d.tenant_id = @tenant_id AND d.run_id = @run_id
ORDER BY a.delivery_id, a.attempt;

-- name: RunSettlement :one
SELECT * FROM run_settlements WHERE tenant_id = @tenant_id AND run_id = @run_id;

-- name: RunFinalMessage :one
-- The run's last assistant text, for its result webhook.
SELECT content FROM messages
WHERE tenant_id = @tenant_id AND run_id = @run_id AND role = 'assistant' AND content <> ''
ORDER BY step DESC, idx DESC LIMIT 1;

-- name: TryLockWebhookSecret :one
-- Serializes the creation of a tenant's webhook signing secret, so the
-- first deliveries of a tenant racing to it create it once. A try-lock:
-- the losers retry later instead of holding a connection while waiting.
SELECT pg_try_advisory_xact_lock(hashtextextended('agentplane.webhook_secret:' || CAST(sqlc.arg(tenant_id) AS uuid)::text, 0));
