-- Sandboxes, uploads, artifacts, settlement receipts and webhook delivery.

-- +goose Up
-- One sandbox per thread at a time; its id is written on the thread once
-- and never silently changed.
CREATE TABLE sandboxes (
    tenant_id         uuid NOT NULL REFERENCES tenants (id),
    id                text NOT NULL,
    thread_id         uuid NOT NULL,
    provider          text NOT NULL,
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'idle', 'destroyed')),
    -- Ownership lease: only the holder drives the sandbox.
    lease_owner       text,
    lease_expires_at  timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    last_used_at      timestamptz NOT NULL DEFAULT now(),
    destroyed_at      timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, thread_id) REFERENCES threads (tenant_id, id)
);
CREATE UNIQUE INDEX sandboxes_live_per_thread ON sandboxes (tenant_id, thread_id) WHERE status <> 'destroyed';
CREATE INDEX sandboxes_idle ON sandboxes (last_used_at) WHERE status = 'idle';

ALTER TABLE threads ADD COLUMN sandbox_id text;

-- Files a user uploaded into the thread's /mnt/user-data/uploads.
CREATE TABLE uploads (
    tenant_id     uuid NOT NULL,
    thread_id     uuid NOT NULL,
    id            uuid NOT NULL,
    name          text NOT NULL,
    size          bigint NOT NULL,
    content_type  text NOT NULL,
    sha256        text NOT NULL,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, thread_id) REFERENCES threads (tenant_id, id)
);
CREATE INDEX uploads_thread ON uploads (tenant_id, thread_id, id);

-- The thread's ordered, de-duplicated list of presented paths.
CREATE TABLE artifacts (
    tenant_id   uuid NOT NULL,
    thread_id   uuid NOT NULL,
    seq         bigint NOT NULL,
    path        text NOT NULL,
    run_id      uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, thread_id, seq),
    UNIQUE (tenant_id, thread_id, path),
    FOREIGN KEY (tenant_id, thread_id) REFERENCES threads (tenant_id, id)
);

-- A run's outputs folder before it started, to tell what it produced.
CREATE TABLE run_output_snapshots (
    tenant_id   uuid NOT NULL,
    run_id      uuid NOT NULL,
    files       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, run_id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
);

-- The delivery receipt: written exactly once per run, before its terminal status.
CREATE TABLE run_settlements (
    tenant_id   uuid NOT NULL,
    run_id      uuid NOT NULL,
    produced    jsonb NOT NULL,
    presented   jsonb NOT NULL,
    matched     jsonb NOT NULL,
    verdict     text NOT NULL CHECK (verdict IN ('delivered', 'incomplete', 'nothing_produced')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, run_id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
);

ALTER TABLE runs ADD COLUMN webhook_url text;
ALTER TABLE agents ADD COLUMN webhook_url text;

-- Webhook deliveries of run results; the id is the receiver's dedupe key.
CREATE TABLE deliveries (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    run_id            uuid NOT NULL,
    url               text NOT NULL,
    status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts          integer NOT NULL DEFAULT 0,
    last_status_code  integer,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    delivered_at      timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, run_id, url),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
);

CREATE TABLE delivery_attempts (
    tenant_id    uuid NOT NULL,
    delivery_id  uuid NOT NULL,
    attempt      integer NOT NULL,
    status_code  integer,
    error        text,
    duration_ms  integer NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, delivery_id, attempt),
    FOREIGN KEY (tenant_id, delivery_id) REFERENCES deliveries (tenant_id, id)
);

-- +goose Down
DROP TABLE delivery_attempts;
DROP TABLE deliveries;
ALTER TABLE agents DROP COLUMN webhook_url;
ALTER TABLE runs DROP COLUMN webhook_url;
DROP TABLE run_settlements;
DROP TABLE run_output_snapshots;
DROP TABLE artifacts;
DROP TABLE uploads;
ALTER TABLE threads DROP COLUMN sandbox_id;
DROP TABLE sandboxes;
