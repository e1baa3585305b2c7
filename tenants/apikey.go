package tenants

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/internal/tenantsdb"
)

// An API key reads "ap_<prefix>_<secret>": the prefix (10 characters) is
// public and finds the row, the secret (40 characters, ~238 bits) is checked
// against its SHA-256. A fast hash is right here: the secret is random, not
// a human password, so brute force is hopeless either way.
const (
	keyPrefixLen = 10
	keySecretLen = 40
	keyAlphabet  = "abcdefghijklmnopqrstuvwxyz0123456789"
)

var keyRE = regexp.MustCompile(`^ap_([a-z0-9]{10})_([a-z0-9]{40})$`)

// APIKey is a key's metadata; the secret is never part of it.
type APIKey struct {
	ID         uuid.UUID
	TenantID   uuid.UUID
	Name       string
	Role       policy.Role
	Prefix     string
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

func apiKeyFromRow(r tenantsdb.ApiKey) APIKey {
	return APIKey{
		ID: r.ID, TenantID: r.TenantID, Name: r.Name, Role: policy.Role(r.Role), Prefix: r.Prefix,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
		LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt,
	}
}

// CreatedAPIKey is a new key with its full secret, returned exactly once.
type CreatedAPIKey struct {
	APIKey
	Key string
}

// CreateAPIKeyInput describes a new key.
type CreateAPIKeyInput struct {
	Name      string
	Role      policy.Role
	ExpiresAt *time.Time
}

// CreateAPIKey issues a key in a.Tenant. Nobody issues a key above their own role.
func (s *Service) CreateAPIKey(ctx context.Context, a Access, in CreateAPIKeyInput) (CreatedAPIKey, error) {
	if !a.canGrant(in.Role) {
		return CreatedAPIKey{}, roleEscalation(in.Role)
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(time.Now()) {
		return CreatedAPIKey{}, &InvalidError{Field: "expires_at", Message: "must be in the future"}
	}
	prefix, secret := randomString(keyPrefixLen), randomString(keySecretLen)
	hash := sha256.Sum256([]byte(secret))
	var out CreatedAPIKey
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		row, err := tenantsdb.New(tx).CreateAPIKey(ctx, tenantsdb.CreateAPIKeyParams{
			TenantID: a.Tenant.ID, ID: uuid.Must(uuid.NewV7()), Name: in.Name, Role: string(in.Role),
			Prefix: prefix, SecretHash: hash[:], CreatedBy: a.Principal.String(), ExpiresAt: in.ExpiresAt,
		})
		if err != nil {
			return fmt.Errorf("create api key: %w", err)
		}
		out = CreatedAPIKey{APIKey: apiKeyFromRow(row), Key: "ap_" + prefix + "_" + secret}
		diff := map[string]any{"name": in.Name, "role": in.Role, "prefix": prefix, "expires_at": in.ExpiresAt}
		return s.record(ctx, tx, a, "api_key.create", "api_key", row.ID.String(), diff)
	})
	return out, err
}

// APIKeyPage is one page of keys.
type APIKeyPage struct {
	Keys       []APIKey
	NextCursor string
}

// ListAPIKeys lists a tenant's keys, revoked ones included.
func (s *Service) ListAPIKeys(ctx context.Context, a Access, page Page) (APIKeyPage, error) {
	after, err := page.after()
	if err != nil {
		return APIKeyPage{}, err
	}
	lim := page.limit()
	rows, err := tenantsdb.New(s.pool).ListAPIKeys(ctx, tenantsdb.ListAPIKeysParams{TenantID: a.Tenant.ID, After: after, Lim: lim})
	if err != nil {
		return APIKeyPage{}, fmt.Errorf("list api keys of %s: %w", a.Tenant.Slug, err)
	}
	out := APIKeyPage{Keys: make([]APIKey, len(rows))}
	for i, r := range rows {
		out.Keys[i] = apiKeyFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = nextCursor(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// RevokeAPIKey revokes a key; revoking a revoked key is not an error.
// Nobody revokes a key above their own role. This process stops accepting
// the key when the call returns; other processes within KeyCacheTTL.
func (s *Service) RevokeAPIKey(ctx context.Context, a Access, id uuid.UUID) (APIKey, error) {
	var out APIKey
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		q := tenantsdb.New(tx)
		cur, err := q.APIKeyByID(ctx, tenantsdb.APIKeyByIDParams{TenantID: a.Tenant.ID, ID: id})
		if err != nil {
			return notFound(err, "api key", id.String())
		}
		if !a.canGrant(policy.Role(cur.Role)) {
			return roleEscalation(policy.Role(cur.Role))
		}
		out = apiKeyFromRow(cur)
		if cur.RevokedAt != nil {
			return nil
		}
		row, err := q.RevokeAPIKey(ctx, tenantsdb.RevokeAPIKeyParams{TenantID: a.Tenant.ID, ID: id})
		if err != nil {
			return fmt.Errorf("revoke api key %s: %w", id, err)
		}
		out = apiKeyFromRow(row)
		return s.record(ctx, tx, a, "api_key.revoke", "api_key", id.String(), map[string]any{"name": row.Name, "prefix": row.Prefix})
	})
	if err != nil {
		return APIKey{}, err
	}
	// Purge after commit: a load racing the transaction is refused by the
	// cache generation, and a load after this point reads the revocation.
	s.keys.purge(out.Prefix)
	return out, nil
}

// AuthenticateKey turns a presented key into a principal, or an *AuthError
// saying why not (or ErrTenantSuspended). Verified keys are cached briefly.
func (s *Service) AuthenticateKey(ctx context.Context, raw string) (policy.Principal, error) {
	m := keyRE.FindStringSubmatch(raw)
	if m == nil {
		return policy.Principal{}, &AuthError{Code: "invalid_api_key", Message: "malformed API key"}
	}
	prefix, secret := m[1], m[2]
	hash := sha256.Sum256([]byte(secret))
	e, ok := s.keys.get(prefix)
	if !ok {
		var err error
		if e, err = s.loadKey(ctx, prefix); err != nil {
			return policy.Principal{}, err
		}
	}
	if subtle.ConstantTimeCompare(e.hash, hash[:]) != 1 {
		return policy.Principal{}, &AuthError{Code: "invalid_api_key", Message: "unknown API key"}
	}
	return e.check(time.Now())
}

func (s *Service) loadKey(ctx context.Context, prefix string) (keyEntry, error) {
	gen := s.keys.generation()
	row, err := tenantsdb.New(s.pool).APIKeyForAuth(ctx, prefix)
	if errors.Is(err, pgx.ErrNoRows) {
		return keyEntry{}, &AuthError{Code: "invalid_api_key", Message: "unknown API key"}
	}
	if err != nil {
		return keyEntry{}, fmt.Errorf("look up api key: %w", err)
	}
	e := keyEntry{
		hash:      row.SecretHash,
		expiresAt: row.ExpiresAt,
		revoked:   row.RevokedAt != nil,
		suspended: row.TenantStatus == string(StatusSuspended),
		principal: policy.Principal{
			Kind: policy.KindAPIKey, ID: row.ID.String(), Label: row.Name,
			TenantID: row.TenantID.String(), Role: policy.Role(row.Role),
		},
	}
	s.keys.put(prefix, e, gen)
	if !e.revoked {
		// Best effort and throttled in SQL to once a minute per key.
		if err := tenantsdb.New(s.pool).TouchAPIKey(ctx, tenantsdb.TouchAPIKeyParams{TenantID: row.TenantID, ID: row.ID}); err != nil {
			s.logger.WarnContext(ctx, "touch api key", "error", err)
		}
	}
	return e, nil
}

func roleEscalation(r policy.Role) error {
	return &ForbiddenError{Code: "role_escalation", Message: fmt.Sprintf("you cannot grant role %q, which is above your own", r)}
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		// 256 % 36 leaves a bias of under 1%: irrelevant at these lengths,
		// but reject the tail anyway so every character is uniform.
		for b[i] >= 252 {
			var one [1]byte
			_, _ = rand.Read(one[:])
			b[i] = one[0]
		}
		b[i] = keyAlphabet[int(b[i])%len(keyAlphabet)]
	}
	return string(b)
}
