package secrets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets/internal/secretsdb"
)

// keyCacheTTL is how long an unwrapped data key is kept in memory. Data keys
// never change once created, so the bound only limits how long key material
// lingers in the heap of a process that stopped using it.
const keyCacheTTL = 5 * time.Minute

// Vault stores and reveals tenant secrets. It is safe for concurrent use.
type Vault struct {
	pool   *pgxpool.Pool
	master []byte
	logger *slog.Logger
	keys   keyCache
}

// NewVault returns a vault over pool that wraps data keys with masterKey,
// which must be KeySize bytes. The key is copied. A nil logger discards.
func NewVault(pool *pgxpool.Pool, masterKey []byte, logger *slog.Logger) (*Vault, error) {
	if pool == nil {
		return nil, errors.New("secrets: pool is required")
	}
	if len(masterKey) != KeySize {
		return nil, fmt.Errorf("secrets: master key is %d bytes, want %d", len(masterKey), KeySize)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Vault{
		pool:   pool,
		master: append([]byte(nil), masterKey...),
		logger: logger,
		keys:   keyCache{ttl: keyCacheTTL, entries: map[uuid.UUID]cachedKey{}},
	}, nil
}

// CheckMasterKey unwraps the newest stored data key, so a process started
// with the wrong master key fails at start rather than at the first secret.
// A database without data keys passes.
func (v *Vault) CheckMasterKey(ctx context.Context) error {
	row, err := secretsdb.New(v.pool).NewestDataKey(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check master key: %w", err)
	}
	if _, err := v.unwrap(ctx, row.WrappedKey, row.TenantID); err != nil {
		return fmt.Errorf("check master key: %w", err)
	}
	return nil
}

// readKey returns a tenant's data key for reading, from the cache or the
// committed row; a tenant without one has no secrets (NotFoundError).
func (v *Vault) readKey(ctx context.Context, tenantID uuid.UUID, name string) ([]byte, error) {
	if k, ok := v.keys.get(tenantID); ok {
		return k, nil
	}
	wrapped, err := secretsdb.New(v.pool).DataKey(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &tenants.NotFoundError{Kind: "secret", Key: name}
	}
	if err != nil {
		return nil, fmt.Errorf("read data key of tenant %s: %w", tenantID, err)
	}
	k, err := v.unwrap(ctx, wrapped, tenantID)
	if err != nil {
		return nil, err
	}
	// Read outside any transaction, so the row is committed: safe to keep.
	v.keys.put(tenantID, k)
	return k, nil
}

// lockKey locks a tenant's data-key row in tx, creating the key on first
// use, and returns it unwrapped. The key is not cached here: a key created
// in tx does not exist until tx commits.
func (v *Vault) lockKey(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) ([]byte, error) {
	q := secretsdb.New(tx)
	wrapped, err := q.LockDataKey(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		// First use: insert, and if another transaction won the race (it
		// made us wait on the primary key), read its key instead of ours.
		_, fresh, kerr := newDataKey(v.master, tenantID)
		if kerr != nil {
			return nil, kerr
		}
		err = q.CreateDataKey(ctx, secretsdb.CreateDataKeyParams{TenantID: tenantID, WrappedKey: fresh})
		if pg.IsCode(err, pg.CodeForeignKeyViolation) {
			return nil, &tenants.NotFoundError{Kind: "tenant", Key: tenantID.String()}
		}
		if err != nil {
			return nil, fmt.Errorf("create data key of tenant %s: %w", tenantID, err)
		}
		wrapped, err = q.LockDataKey(ctx, tenantID)
	}
	if err != nil {
		return nil, fmt.Errorf("lock data key of tenant %s: %w", tenantID, err)
	}
	return v.unwrap(ctx, wrapped, tenantID)
}

// unwrap opens a wrapped data key and says so loudly when it cannot.
func (v *Vault) unwrap(ctx context.Context, wrapped []byte, tenantID uuid.UUID) ([]byte, error) {
	k, err := unwrap(v.master, wrapped, tenantID)
	if errors.Is(err, ErrWrongMasterKey) {
		v.logger.ErrorContext(ctx, "tenant data key does not unwrap: the master key (AGENTPLANE_MASTER_KEY) is not the one that wrapped it",
			slog.String("tenant_id", tenantID.String()))
	}
	return k, err
}

// keyCache keeps unwrapped data keys of committed rows for a while.
type keyCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[uuid.UUID]cachedKey
}

type cachedKey struct {
	key     []byte
	expires time.Time
}

func (c *keyCache) get(tenantID uuid.UUID) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[tenantID]
	if !ok || time.Now().After(e.expires) {
		return nil, false
	}
	return e.key, true
}

func (c *keyCache) put(tenantID uuid.UUID, key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if len(c.entries) >= 1024 {
		for id, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, id)
			}
		}
	}
	c.entries[tenantID] = cachedKey{key: key, expires: now.Add(c.ttl)}
}
