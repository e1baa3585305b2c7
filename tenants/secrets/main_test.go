package secrets_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// masterKey is the master key of every vault in these tests but the one
// that checks a wrong key is refused.
var masterKey = randomBytes(secrets.KeySize)

var alice = policy.Principal{Kind: policy.KindUser, ID: uuid.NewString(), Label: "alice@example.com"}

func newVault(t *testing.T) *secrets.Vault {
	t.Helper()
	v, err := secrets.NewVault(pgtest.Pool(t), masterKey, nil)
	require.NoError(t, err)
	return v
}

// newTenant inserts a tenant row directly and returns alice's access to it.
func newTenant(t *testing.T) tenants.Access {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	slug := "t-" + hex.EncodeToString(id[10:])
	_, err := pgtest.Pool(t).Exec(t.Context(), `INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3)`, id, slug, "Tenant "+slug)
	require.NoError(t, err)
	return tenants.Access{Principal: alice, Tenant: tenants.Tenant{ID: id, Slug: slug}, Role: policy.RoleOwner}
}

// put stores a secret and requires success.
func put(t *testing.T, v *secrets.Vault, a tenants.Access, name, value string) secrets.Metadata {
	t.Helper()
	md, err := v.Put(t.Context(), a, name, value)
	require.NoError(t, err)
	return md
}

// exec runs a statement as someone with direct database access would.
func exec(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	tag, err := pgtest.Pool(t).Exec(t.Context(), sql, args...)
	require.NoError(t, err)
	return tag.RowsAffected()
}

func count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pgtest.Pool(t).QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func randomValue() string { return "sk-" + hex.EncodeToString(randomBytes(16)) }
