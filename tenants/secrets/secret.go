package secrets

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
	"github.com/agentplane/agentplane/tenants/secrets/internal/secretsdb"
)

// NamePattern is what a secret name must match: a letter or underscore,
// then up to 127 letters, digits or underscores, so that every name is also
// a valid environment variable name. Names are case-sensitive.
const NamePattern = `^[A-Za-z_][A-Za-z0-9_]{0,127}$`

// MaxValueBytes bounds a secret value.
const MaxValueBytes = 64 << 10

var nameRE = regexp.MustCompile(NamePattern)

// Page sizes for List.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// Metadata describes a secret's current version; it never holds the value.
type Metadata struct {
	Name    string
	Version int
	// Fingerprint identifies the value within its tenant ("sha256:" + 12
	// hex digits), so people can tell whether two versions differ.
	Fingerprint string
	// UpdatedAt is when the current version was written.
	UpdatedAt time.Time
}

// MetadataPage is one page of List, in name order.
type MetadataPage struct {
	Secrets    []Metadata
	NextCursor string
}

// ValidateName reports whether name may name a secret (an *InvalidError
// for field "name" when not).
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return &tenants.InvalidError{Field: "name", Message: "must start with a letter or underscore and hold at most 128 letters, digits and underscores"}
	}
	return nil
}

func validateValue(value string) error {
	switch {
	case value == "":
		return &tenants.InvalidError{Field: "value", Message: "must not be empty"}
	case len(value) > MaxValueBytes:
		return &tenants.InvalidError{Field: "value", Message: fmt.Sprintf("must be at most %d bytes", MaxValueBytes)}
	}
	return nil
}

// Put stores value as the next version of name in a.Tenant (version 1 for a
// new name) and records secret.put. Older versions are kept.
func (v *Vault) Put(ctx context.Context, a tenants.Access, name, value string) (Metadata, error) {
	var key []byte
	md, err := pg.WithTxV(ctx, v.pool, func(ctx context.Context, tx pgx.Tx) (Metadata, error) {
		md, k, err := v.put(ctx, tx, a, name, value)
		key = k
		return md, err
	})
	if err != nil {
		return Metadata{}, err
	}
	// Committed: the data key row exists now, so it may be cached.
	v.keys.put(a.Tenant.ID, key)
	return md, nil
}

// PutTx is Put inside the caller's transaction. It locks the tenant's
// data-key row and then its audit head until tx ends.
func (v *Vault) PutTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name, value string) (Metadata, error) {
	md, _, err := v.put(ctx, tx, a, name, value)
	return md, err
}

func (v *Vault) put(ctx context.Context, tx pgx.Tx, a tenants.Access, name, value string) (Metadata, []byte, error) {
	if err := ValidateName(name); err != nil {
		return Metadata{}, nil, err
	}
	if err := validateValue(value); err != nil {
		return Metadata{}, nil, err
	}
	tenantID := a.Tenant.ID
	key, err := v.lockKey(ctx, tx, tenantID)
	if err != nil {
		return Metadata{}, nil, fmt.Errorf("put secret %s: %w", name, err)
	}
	q := secretsdb.New(tx)
	last, err := q.LastVersion(ctx, secretsdb.LastVersionParams{TenantID: tenantID, Name: name})
	if err != nil {
		return Metadata{}, nil, fmt.Errorf("put secret %s: last version: %w", name, err)
	}
	version := int(last) + 1
	sealed, err := seal(key, []byte(value), sealAD(tenantID, name, version))
	if err != nil {
		return Metadata{}, nil, fmt.Errorf("put secret %s: seal: %w", name, err)
	}
	row, err := q.InsertSecret(ctx, secretsdb.InsertSecretParams{
		TenantID: tenantID, Name: name, Version: int32(version), Ciphertext: sealed,
		Fingerprint: fingerprint(key, value), CreatedBy: a.Principal.String(),
	})
	if err != nil {
		return Metadata{}, nil, fmt.Errorf("put secret %s: insert version %d: %w", name, version, err)
	}
	md := Metadata{Name: row.Name, Version: int(row.Version), Fingerprint: row.Fingerprint, UpdatedAt: row.CreatedAt}
	diff := map[string]any{"name": md.Name, "version": md.Version, "fingerprint": md.Fingerprint}
	if err := record(ctx, tx, a, "secret.put", name, diff); err != nil {
		return Metadata{}, nil, err
	}
	return md, key, nil
}

// List returns the current version's metadata of each of a.Tenant's
// secrets, in name order.
func (v *Vault) List(ctx context.Context, a tenants.Access, page tenants.Page) (MetadataPage, error) {
	after, err := decodeCursor(page.Cursor)
	if err != nil {
		return MetadataPage{}, err
	}
	lim := pageLimit(page.Limit)
	rows, err := secretsdb.New(v.pool).ListSecrets(ctx, secretsdb.ListSecretsParams{TenantID: a.Tenant.ID, After: after, Lim: lim})
	if err != nil {
		return MetadataPage{}, fmt.Errorf("list secrets of %s: %w", a.Tenant.Slug, err)
	}
	out := MetadataPage{Secrets: make([]Metadata, len(rows))}
	for i, r := range rows {
		out.Secrets[i] = metadataFromRow(r)
	}
	if n := len(rows); n == int(lim) {
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rows[n-1].Name))
	}
	return out, nil
}

func metadataFromRow(r secretsdb.ListSecretsRow) Metadata {
	return Metadata{Name: r.Name, Version: int(r.Version), Fingerprint: r.Fingerprint, UpdatedAt: r.CreatedAt}
}

// Delete removes every version of name from a.Tenant and records
// secret.delete; an unknown name is a *tenants.NotFoundError.
func (v *Vault) Delete(ctx context.Context, a tenants.Access, name string) error {
	return pg.WithTx(ctx, v.pool, func(ctx context.Context, tx pgx.Tx) error {
		return v.DeleteTx(ctx, tx, a, name)
	})
}

// DeleteTx is Delete inside the caller's transaction.
func (v *Vault) DeleteTx(ctx context.Context, tx pgx.Tx, a tenants.Access, name string) error {
	notFound := &tenants.NotFoundError{Kind: "secret", Key: name}
	if !nameRE.MatchString(name) {
		return notFound
	}
	q := secretsdb.New(tx)
	// Same lock order as put: data key, then the audit head.
	if _, err := q.LockDataKey(ctx, a.Tenant.ID); errors.Is(err, pgx.ErrNoRows) {
		return notFound
	} else if err != nil {
		return fmt.Errorf("delete secret %s: lock data key: %w", name, err)
	}
	n, err := q.DeleteSecret(ctx, secretsdb.DeleteSecretParams{TenantID: a.Tenant.ID, Name: name})
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	if n == 0 {
		return notFound
	}
	return record(ctx, tx, a, "secret.delete", name, map[string]any{"name": name, "versions": n})
}

// Reveal returns the plaintext of the newest version of name in the tenant.
// It is for the run runtime, which resolves an agent's secrets just before
// use; transports never call it. An unknown name (or one of another
// tenant) is a *tenants.NotFoundError.
func (v *Vault) Reveal(ctx context.Context, tenantID uuid.UUID, name string) (string, error) {
	if !nameRE.MatchString(name) {
		return "", &tenants.NotFoundError{Kind: "secret", Key: name}
	}
	row, err := secretsdb.New(v.pool).LatestSecret(ctx, secretsdb.LatestSecretParams{TenantID: tenantID, Name: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", &tenants.NotFoundError{Kind: "secret", Key: name}
	}
	if err != nil {
		return "", fmt.Errorf("reveal secret %s: %w", name, err)
	}
	key, err := v.readKey(ctx, tenantID, name)
	if err != nil {
		return "", fmt.Errorf("reveal secret %s: %w", name, err)
	}
	plain, err := open(key, row.Ciphertext, sealAD(tenantID, name, int(row.Version)))
	if errors.Is(err, errOpen) {
		return "", fmt.Errorf("reveal secret %s version %d of tenant %s: %w", name, row.Version, tenantID, ErrUnreadable)
	}
	if err != nil {
		return "", fmt.Errorf("reveal secret %s: %w", name, err)
	}
	return string(plain), nil
}

func record(ctx context.Context, tx pgx.Tx, a tenants.Access, action, name string, diff map[string]any) error {
	err := audit.Record(ctx, tx, audit.Event{
		TenantID: a.Tenant.ID, Actor: a.Principal, Action: action,
		TargetKind: "secret", TargetID: name, Diff: diff,
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

func pageLimit(n int) int32 {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return int32(n)
}

// decodeCursor reads a List cursor: the last name of the previous page,
// base64url-encoded to stay opaque. nil means from the start.
func decodeCursor(cursor string) (*string, error) {
	if cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !nameRE.Match(raw) {
		return nil, fmt.Errorf("list secrets: %w", tenants.ErrInvalidCursor)
	}
	name := string(raw)
	return &name, nil
}
