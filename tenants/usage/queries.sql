-- name: InsertUsage :execrows
-- call_key makes recording idempotent: a replayed call records nothing.
INSERT INTO usage_records (tenant_id, id, run_id, thread_id, agent_name, caller, principal, model_endpoint, model,
                           call_key, input_tokens, output_tokens, cache_read_tokens, total_tokens, latency_ms)
VALUES (@tenant_id, @id, @run_id, @thread_id, @agent_name, @caller, @principal, @model_endpoint, @model,
        @call_key, @input_tokens, @output_tokens, @cache_read_tokens, @total_tokens, @latency_ms)
ON CONFLICT (tenant_id, run_id, call_key) DO NOTHING;

-- name: RunUsage :many
SELECT * FROM usage_records WHERE tenant_id = @tenant_id AND run_id = @run_id ORDER BY created_at, id;

-- name: ThreadTotals :one
SELECT coalesce(sum(input_tokens), 0)::bigint AS input_tokens,
       coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
       coalesce(sum(cache_read_tokens), 0)::bigint AS cache_read_tokens,
       coalesce(sum(total_tokens), 0)::bigint AS total_tokens,
       count(*)::bigint AS calls
FROM usage_records WHERE tenant_id = @tenant_id AND thread_id = @thread_id;
