-- Runs: the secrets vault, model endpoints, agents, threads, runs with their
-- leases, the durable message log, run events and the usage ledger.

-- +goose Up
-- Each tenant's data key, sealed by the master key (AES-256-GCM).
CREATE TABLE tenant_data_keys (
    tenant_id    uuid PRIMARY KEY REFERENCES tenants (id),
    wrapped_key  bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Secret values sealed with the tenant's data key, bound to (tenant, name,
-- version) as additional data. Every rotation adds a version.
CREATE TABLE secrets (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    name         text NOT NULL,
    version      integer NOT NULL CHECK (version > 0),
    ciphertext   bytea NOT NULL,
    fingerprint  text NOT NULL,
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name, version)
);

-- OpenAI-compatible model endpoints a tenant's agents may call.
CREATE TABLE model_endpoints (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    name            text NOT NULL,
    base_url        text NOT NULL,
    model           text NOT NULL,
    api_key_secret  text,
    is_default      boolean NOT NULL DEFAULT false,
    context_window  integer NOT NULL DEFAULT 128000 CHECK (context_window > 0),
    supports_tools  boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);
CREATE UNIQUE INDEX model_endpoints_one_default ON model_endpoints (tenant_id) WHERE is_default;

CREATE TABLE agents (
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    id               uuid NOT NULL,
    name             text NOT NULL,
    -- The model endpoint's name; NULL means the tenant's default endpoint.
    model            text,
    instructions     text NOT NULL DEFAULT '',
    tool_groups      text[] NOT NULL DEFAULT '{}',
    -- NULL = every enabled skill, '{}' = none.
    skills           text[],
    subagents        boolean NOT NULL DEFAULT false,
    max_turns        integer NOT NULL DEFAULT 50 CHECK (max_turns BETWEEN 1 AND 1000),
    token_budget     bigint CHECK (token_budget > 0),
    timeout_seconds  integer NOT NULL DEFAULT 600 CHECK (timeout_seconds BETWEEN 1 AND 86400),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

CREATE TABLE threads (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    title       text NOT NULL DEFAULT '',
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE runs (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    thread_id         uuid NOT NULL,
    agent_id          uuid NOT NULL,
    agent_name        text NOT NULL,
    principal_kind    text NOT NULL,
    principal_id      text NOT NULL,
    principal_role    text NOT NULL DEFAULT '',
    status            text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
    stop_reason       text CHECK (stop_reason IN ('end_turn', 'max_turns', 'token_budget', 'quota_exceeded',
                                                  'subagent_limit', 'model_length', 'cancelled')),
    error             text,
    input             text NOT NULL,
    metadata          jsonb NOT NULL DEFAULT '{}',
    idempotency_key   text,
    request_hash      bytea,
    cancel_requested  boolean NOT NULL DEFAULT false,
    turns             integer NOT NULL DEFAULT 0,
    -- Last event sequence number handed out; events take the next one.
    event_seq         bigint NOT NULL DEFAULT 0,
    input_tokens      bigint NOT NULL DEFAULT 0,
    output_tokens     bigint NOT NULL DEFAULT 0,
    total_tokens      bigint NOT NULL DEFAULT 0,
    -- The lease: whoever holds the current epoch may write; every write is
    -- fenced by it, so a worker that lost the lease stops.
    lease_owner       text,
    lease_epoch       bigint NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, thread_id) REFERENCES threads (tenant_id, id)
);
CREATE UNIQUE INDEX runs_idempotency ON runs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_thread ON runs (tenant_id, thread_id, id);
CREATE INDEX runs_status ON runs (tenant_id, status, id);
CREATE INDEX runs_expired_leases ON runs (lease_expires_at) WHERE status = 'running';

-- The durable message log of a thread. A run's messages carry the step
-- (turn) that wrote them; (run_id, step, idx) makes a retried step's writes
-- idempotent, so a resumed run never duplicates messages.
CREATE TABLE messages (
    tenant_id     uuid NOT NULL,
    thread_id     uuid NOT NULL,
    seq           bigint NOT NULL,
    run_id        uuid NOT NULL,
    step          integer NOT NULL,
    idx           integer NOT NULL,
    role          text NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content       text NOT NULL DEFAULT '',
    tool_calls    jsonb,
    tool_call_id  text,
    tool_name     text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, thread_id, seq),
    UNIQUE (tenant_id, run_id, step, idx),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
);

CREATE TABLE run_events (
    tenant_id   uuid NOT NULL,
    run_id      uuid NOT NULL,
    seq         bigint NOT NULL,
    type        text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, run_id, seq),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
);

-- One row per model call; call_key (run, caller, step) makes recording
-- idempotent across retries and resumed runs.
CREATE TABLE usage_records (
    tenant_id          uuid NOT NULL REFERENCES tenants (id),
    id                 uuid NOT NULL,
    run_id             uuid NOT NULL,
    thread_id          uuid NOT NULL,
    agent_name         text NOT NULL,
    caller             text NOT NULL,
    principal          text NOT NULL,
    model_endpoint     text NOT NULL,
    model              text NOT NULL,
    call_key           text NOT NULL,
    input_tokens       bigint NOT NULL DEFAULT 0,
    output_tokens      bigint NOT NULL DEFAULT 0,
    cache_read_tokens  bigint NOT NULL DEFAULT 0,
    total_tokens       bigint NOT NULL DEFAULT 0,
    latency_ms         integer NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, run_id, call_key)
);
CREATE INDEX usage_records_time ON usage_records (tenant_id, created_at);

-- +goose Down
DROP TABLE usage_records;
DROP TABLE run_events;
DROP TABLE messages;
DROP TABLE runs;
DROP TABLE threads;
DROP TABLE agents;
DROP TABLE model_endpoints;
DROP TABLE secrets;
DROP TABLE tenant_data_keys;
