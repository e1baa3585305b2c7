package tenants

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/policy"
)

// keyCache remembers verified key rows for a short TTL so an authenticated
// request does not pay a database round trip. Revocation in this process
// purges at once; other processes notice within the TTL.
type keyCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]keyEntry
	// gen counts purges. A load remembers gen before reading the database
	// and is stored only if no purge happened meanwhile, so a read that
	// raced a revocation cannot put the old row back.
	gen uint64
}

type keyEntry struct {
	hash      []byte
	expiresAt *time.Time
	revoked   bool
	suspended bool
	principal policy.Principal
	cachedAt  time.Time
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, m: map[string]keyEntry{}}
}

// check says whether the key may be used now.
func (e keyEntry) check(now time.Time) (policy.Principal, error) {
	switch {
	case e.revoked:
		return policy.Principal{}, &AuthError{Code: "api_key_revoked", Message: "API key has been revoked"}
	case e.expiresAt != nil && !now.Before(*e.expiresAt):
		return policy.Principal{}, &AuthError{Code: "api_key_expired", Message: "API key has expired"}
	case e.suspended:
		return policy.Principal{}, ErrTenantSuspended
	}
	return e.principal, nil
}

func (c *keyCache) get(prefix string) (keyEntry, bool) {
	if c.ttl <= 0 {
		return keyEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[prefix]
	if !ok || time.Since(e.cachedAt) > c.ttl {
		return keyEntry{}, false
	}
	return e, true
}

// generation is read before a database load; see put.
func (c *keyCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *keyCache) put(prefix string, e keyEntry, gen uint64) {
	if c.ttl <= 0 {
		return
	}
	e.cachedAt = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	// Sweep stale entries as we go so the map stays bounded by the keys
	// used within one TTL.
	if len(c.m) > 1024 {
		for k, v := range c.m {
			if time.Since(v.cachedAt) > c.ttl {
				delete(c.m, k)
			}
		}
	}
	c.m[prefix] = e
}

func (c *keyCache) purge(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, prefix)
}

func (c *keyCache) purgeTenant(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, v := range c.m {
		if v.principal.TenantID == id.String() {
			delete(c.m, k)
		}
	}
}
