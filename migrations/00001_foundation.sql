-- Foundation: tenants, identity, sessions, audit log and capability policy.

-- +goose Up
CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    slug        text NOT NULL,
    name        text NOT NULL,
    status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- Deleted tenants are kept (their audit chain must survive) but hidden.
    deleted_at  timestamptz
);
CREATE UNIQUE INDEX tenants_slug_live ON tenants (slug) WHERE deleted_at IS NULL;

-- Users are platform-wide principals; their tenant access is a membership.
CREATE TABLE users (
    id              uuid PRIMARY KEY,
    email           text NOT NULL,
    password_hash   text,
    platform_admin  boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE memberships (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    user_id     uuid NOT NULL REFERENCES users (id),
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

CREATE TABLE api_keys (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    id            uuid NOT NULL,
    name          text NOT NULL,
    role          text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    -- The public prefix finds the row; only a SHA-256 of the secret is kept.
    prefix        text NOT NULL UNIQUE,
    secret_hash   bytea NOT NULL,
    created_by    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- Console sessions live server-side; the cookie holds a token whose hash is the key.
CREATE TABLE sessions (
    token_hash    bytea PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

-- The audit log is hash-chained per tenant: hash = SHA-256(prev_hash || content).
CREATE TABLE audit_events (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    seq          bigint NOT NULL,
    id           uuid NOT NULL,
    actor_kind   text NOT NULL,
    actor_id     text NOT NULL,
    action       text NOT NULL,
    target_kind  text NOT NULL,
    target_id    text NOT NULL,
    request_id   text NOT NULL DEFAULT '',
    diff         jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    prev_hash    bytea NOT NULL,
    hash         bytea NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX audit_events_action ON audit_events (tenant_id, action, seq);

-- The head row serializes appends to one tenant's chain (it is locked FOR UPDATE).
CREATE TABLE audit_heads (
    tenant_id  uuid PRIMARY KEY REFERENCES tenants (id),
    seq        bigint NOT NULL,
    hash       bytea NOT NULL
);

-- Casbin rules for tenant-editable policy. v1 is the domain; tenant_id repeats
-- it as a real column (NULL for platform-wide rules) so tenant rows stay scoped.
CREATE TABLE casbin_rules (
    id         bigserial PRIMARY KEY,
    tenant_id  uuid REFERENCES tenants (id),
    ptype      text NOT NULL,
    v0         text NOT NULL DEFAULT '',
    v1         text NOT NULL DEFAULT '',
    v2         text NOT NULL DEFAULT '',
    v3         text NOT NULL DEFAULT '',
    v4         text NOT NULL DEFAULT '',
    v5         text NOT NULL DEFAULT '',
    UNIQUE NULLS NOT DISTINCT (tenant_id, ptype, v0, v1, v2, v3, v4, v5)
);

-- +goose Down
DROP TABLE casbin_rules;
DROP TABLE audit_heads;
DROP TABLE audit_events;
DROP TABLE sessions;
DROP TABLE api_keys;
DROP TABLE memberships;
DROP TABLE users;
DROP TABLE tenants;
