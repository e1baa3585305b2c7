-- Settlement (DESIGN §10): a run's outputs snapshot, the paths it
-- presented, and its delivery receipt. RunSettlement (reading the receipt)
-- lives in delivery.sql. Every query is scoped by tenant id.

-- name: HasOutputSnapshot :one
SELECT EXISTS (SELECT 1 FROM run_output_snapshots WHERE tenant_id = @tenant_id AND run_id = @run_id);

-- name: InsertOutputSnapshot :exec
-- Taken once per run, at its first claim; a resumed run keeps the first.
INSERT INTO run_output_snapshots (tenant_id, run_id, files)
VALUES (@tenant_id, @run_id, @files)
ON CONFLICT (tenant_id, run_id) DO NOTHING;

-- name: OutputSnapshot :one
SELECT files FROM run_output_snapshots WHERE tenant_id = @tenant_id AND run_id = @run_id;

-- name: RunArtifactPaths :many
-- Artifacts this run added to its thread's list.
SELECT path FROM artifacts
WHERE tenant_id = @tenant_id AND thread_id = @thread_id AND run_id = @run_id
ORDER BY seq;

-- name: RunPresentedEventPaths :many
-- Paths this run declared with present_files, from its artifact.presented
-- events: a path presented again keeps the earlier run's artifact row, so
-- the rows alone would miss it.
SELECT x.path::text AS path
FROM run_events e
CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(e.data -> 'paths') = 'array' THEN e.data -> 'paths' ELSE '[]'::jsonb END
) WITH ORDINALITY AS x(path, ord)
WHERE e.tenant_id = @tenant_id AND e.run_id = @run_id AND e.type = 'artifact.presented'
ORDER BY e.seq, x.ord;

-- name: InsertSettlement :exec
-- The receipt is written once per run; a resumed finish keeps the first.
INSERT INTO run_settlements (tenant_id, run_id, produced, presented, matched, verdict)
VALUES (@tenant_id, @run_id, @produced, @presented, @matched, @verdict)
ON CONFLICT (tenant_id, run_id) DO NOTHING;
