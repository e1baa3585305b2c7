package secrets_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/secrets"
)

func TestPutReveal(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	value := randomValue()

	md := put(t, v, a, "OPENAI_API_KEY", value)
	require.Equal(t, "OPENAI_API_KEY", md.Name)
	require.Equal(t, 1, md.Version)
	require.Regexp(t, `^sha256:[0-9a-f]{12}$`, md.Fingerprint)
	plain := sha256.Sum256([]byte(value))
	require.NotEqual(t, "sha256:"+hex.EncodeToString(plain[:])[:12], md.Fingerprint, "a fingerprint is keyed, not a plain hash")
	require.False(t, md.UpdatedAt.IsZero())

	got, err := v.Reveal(t.Context(), a.Tenant.ID, "OPENAI_API_KEY")
	require.NoError(t, err)
	require.Equal(t, value, got)

	// Another vault (another process) with the same master key reads it too.
	got, err = newVault(t).Reveal(t.Context(), a.Tenant.ID, "OPENAI_API_KEY")
	require.NoError(t, err)
	require.Equal(t, value, got)

	// Names are case-sensitive.
	_, err = v.Reveal(t.Context(), a.Tenant.ID, "openai_api_key")
	requireNotFound(t, err)

	// The stored row holds neither the value nor the data key in the clear.
	var ct, wrapped []byte
	require.NoError(t, pgtest.Pool(t).QueryRow(t.Context(), `SELECT ciphertext FROM secrets WHERE tenant_id = $1`, a.Tenant.ID).Scan(&ct))
	require.NotContains(t, string(ct), value)
	require.NoError(t, pgtest.Pool(t).QueryRow(t.Context(), `SELECT wrapped_key FROM tenant_data_keys WHERE tenant_id = $1`, a.Tenant.ID).Scan(&wrapped))
	require.Len(t, wrapped, 12+32+16, "nonce || wrapped key || tag")
}

func TestRotationKeepsVersions(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	v1, v2 := randomValue(), randomValue()

	m1 := put(t, v, a, "TOKEN", v1)
	m2 := put(t, v, a, "TOKEN", v2)
	require.Equal(t, 1, m1.Version)
	require.Equal(t, 2, m2.Version)
	require.NotEqual(t, m1.Fingerprint, m2.Fingerprint)
	require.Equal(t, 2, count(t, `SELECT count(*) FROM secrets WHERE tenant_id = $1 AND name = 'TOKEN'`, a.Tenant.ID))

	got, err := v.Reveal(t.Context(), a.Tenant.ID, "TOKEN")
	require.NoError(t, err)
	require.Equal(t, v2, got)

	// Putting the first value again is version 3 with version 1's fingerprint.
	m3 := put(t, v, a, "TOKEN", v1)
	require.Equal(t, 3, m3.Version)
	require.Equal(t, m1.Fingerprint, m3.Fingerprint)

	page, err := v.List(t.Context(), a, tenants.Page{})
	require.NoError(t, err)
	require.Equal(t, normalize([]secrets.Metadata{m3}), normalize(page.Secrets))
}

// A ciphertext opens only in the row it was sealed for.
func TestCiphertextBoundToRow(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	put(t, v, a, "A", randomValue())
	put(t, v, a, "B", randomValue())
	put(t, v, a, "B", randomValue())
	other := newTenant(t)
	put(t, v, other, "A", randomValue())

	// A's ciphertext moved to name B (version 2, the latest).
	require.EqualValues(t, 1, exec(t, `UPDATE secrets SET ciphertext = (SELECT ciphertext FROM secrets WHERE tenant_id = $1 AND name = 'A')
		WHERE tenant_id = $1 AND name = 'B' AND version = 2`, a.Tenant.ID))
	_, err := v.Reveal(t.Context(), a.Tenant.ID, "B")
	require.ErrorIs(t, err, secrets.ErrUnreadable)

	// B's version 1 moved to version 2 of the same name.
	require.EqualValues(t, 1, exec(t, `UPDATE secrets SET ciphertext = (SELECT ciphertext FROM secrets WHERE tenant_id = $1 AND name = 'B' AND version = 1)
		WHERE tenant_id = $1 AND name = 'B' AND version = 2`, a.Tenant.ID))
	_, err = v.Reveal(t.Context(), a.Tenant.ID, "B")
	require.ErrorIs(t, err, secrets.ErrUnreadable)

	// Tenant a's ciphertext and data key both moved to the other tenant.
	require.EqualValues(t, 1, exec(t, `UPDATE secrets SET ciphertext = (SELECT ciphertext FROM secrets WHERE tenant_id = $1 AND name = 'A')
		WHERE tenant_id = $2 AND name = 'A'`, a.Tenant.ID, other.Tenant.ID))
	_, err = v.Reveal(t.Context(), other.Tenant.ID, "A")
	require.ErrorIs(t, err, secrets.ErrUnreadable)
	// (Backdated, so parallel tests' CheckMasterKey never picks this key.)
	require.EqualValues(t, 1, exec(t, `UPDATE tenant_data_keys SET wrapped_key = (SELECT wrapped_key FROM tenant_data_keys WHERE tenant_id = $1),
		created_at = '2000-01-01' WHERE tenant_id = $2`, a.Tenant.ID, other.Tenant.ID))
	_, err = newVault(t).Reveal(t.Context(), other.Tenant.ID, "A")
	require.ErrorIs(t, err, secrets.ErrWrongMasterKey, "a wrapped key is bound to its tenant")

	// The untouched secret still opens.
	_, err = v.Reveal(t.Context(), a.Tenant.ID, "A")
	require.NoError(t, err)
}

func TestWrongMasterKey(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	put(t, v, a, "KEY", randomValue())

	wrong, err := secrets.NewVault(pgtest.Pool(t), randomBytes(secrets.KeySize), nil)
	require.NoError(t, err)
	_, err = wrong.Reveal(t.Context(), a.Tenant.ID, "KEY")
	require.ErrorIs(t, err, secrets.ErrWrongMasterKey)
	_, err = wrong.Put(t.Context(), a, "KEY", randomValue())
	require.ErrorIs(t, err, secrets.ErrWrongMasterKey)
	require.ErrorIs(t, wrong.CheckMasterKey(t.Context()), secrets.ErrWrongMasterKey)
	require.NoError(t, v.CheckMasterKey(t.Context()))
	require.Equal(t, 1, count(t, `SELECT count(*) FROM secrets WHERE tenant_id = $1`, a.Tenant.ID), "nothing written with the wrong key")

	for _, n := range []int{0, 16, 31, 33} {
		_, err := secrets.NewVault(pgtest.Pool(t), randomBytes(n), nil)
		require.Error(t, err, "%d-byte master key", n)
	}
}

// The value appears nowhere but in Reveal's result: not in the audit log,
// not in List, not in errors.
func TestValueNeverLeaves(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	value := randomValue()
	md := put(t, v, a, "LEAKY", value)
	put(t, v, a, "LEAKY", value+"-2")
	require.NoError(t, v.Delete(t.Context(), a, "LEAKY"))

	rows, err := pgtest.Pool(t).Query(t.Context(), `SELECT action, target_kind, target_id, diff::text FROM audit_events WHERE tenant_id = $1 ORDER BY seq`, a.Tenant.ID)
	require.NoError(t, err)
	var actions []string
	for rows.Next() {
		var action, kind, target, diff string
		require.NoError(t, rows.Scan(&action, &kind, &target, &diff))
		require.NotContains(t, diff, value)
		require.Equal(t, "secret", kind)
		require.Equal(t, "LEAKY", target)
		actions = append(actions, action)
		if action == "secret.put" && strings.Contains(diff, `"version": 1`) {
			require.Contains(t, diff, md.Fingerprint)
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"secret.put", "secret.put", "secret.delete"}, actions)

	put(t, v, a, "LEAKY", value)
	page, err := v.List(t.Context(), a, tenants.Page{})
	require.NoError(t, err)
	require.NotContains(t, fmt.Sprintf("%+v", page), value)
	_, err = v.Put(t.Context(), a, "bad-name", value)
	require.Error(t, err)
	require.NotContains(t, err.Error(), value)
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	v, a, b := newVault(t), newTenant(t), newTenant(t)
	value := randomValue()
	put(t, v, a, "SHARED_NAME", value)

	_, err := v.Reveal(t.Context(), b.Tenant.ID, "SHARED_NAME")
	requireNotFound(t, err)
	page, err := v.List(t.Context(), b, tenants.Page{})
	require.NoError(t, err)
	require.Empty(t, page.Secrets)
	requireNotFound(t, v.Delete(t.Context(), b, "SHARED_NAME"))

	// B's own secret of the same name is separate, with its own versions.
	mb := put(t, v, b, "SHARED_NAME", value)
	require.Equal(t, 1, mb.Version)
	got, err := v.Reveal(t.Context(), a.Tenant.ID, "SHARED_NAME")
	require.NoError(t, err)
	require.Equal(t, value, got)
	ma, err := v.List(t.Context(), a, tenants.Page{})
	require.NoError(t, err)
	require.NotEqual(t, ma.Secrets[0].Fingerprint, mb.Fingerprint, "fingerprints do not correlate tenants")
	_, err = v.Reveal(t.Context(), uuid.New(), "SHARED_NAME")
	requireNotFound(t, err)
}

// Concurrent first writes of a new tenant create one data key, and
// concurrent writes of one name get distinct, gap-free versions.
func TestConcurrentFirstPut(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	const n = 5
	var wg sync.WaitGroup
	versions := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// A vault per goroutine: no shared cache, as in separate processes.
			vi, err := secrets.NewVault(pgtest.Pool(t), masterKey, nil)
			if err != nil {
				errs[i] = err
				return
			}
			md, err := vi.Put(t.Context(), a, "RACE", fmt.Sprintf("value-%d", i))
			versions[i], errs[i] = md.Version, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.ElementsMatch(t, []int{1, 2, 3, 4, 5}, versions)
	require.Equal(t, 1, count(t, `SELECT count(*) FROM tenant_data_keys WHERE tenant_id = $1`, a.Tenant.ID))
	got, err := v.Reveal(t.Context(), a.Tenant.ID, "RACE")
	require.NoError(t, err)
	require.Regexp(t, `^value-\d$`, got)
}

func TestValidation(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	for _, tc := range []struct {
		name, value string
		field       string
	}{
		{"A", "x", ""},
		{"_", "x", ""},
		{"_private_1", "x", ""},
		{"a" + strings.Repeat("b", 127), "x", ""},
		{"a" + strings.Repeat("b", 128), "x", "name"},
		{"", "x", "name"},
		{"1ABC", "x", "name"},
		{"WITH-DASH", "x", "name"},
		{"WITH SPACE", "x", "name"},
		{"DOTTED.NAME", "x", "name"},
		{"PIPE|NAME", "x", "name"},
		{"ÜMLAUT", "x", "name"},
		{"TRAILING\n", "x", "name"},
		{"EMPTY", "", "value"},
		{"MAX", strings.Repeat("v", secrets.MaxValueBytes), ""},
		{"TOO_BIG", strings.Repeat("v", secrets.MaxValueBytes+1), "value"},
	} {
		_, err := v.Put(t.Context(), a, tc.name, tc.value)
		if tc.field == "" {
			require.NoError(t, err, "name %q", tc.name)
			continue
		}
		var inv *tenants.InvalidError
		require.ErrorAs(t, err, &inv, "name %q", tc.name)
		require.Equal(t, tc.field, inv.Field)
		require.ErrorIs(t, err, tenants.ErrInvalidInput)
	}
	require.Equal(t, 4+1, count(t, `SELECT count(*) FROM secrets WHERE tenant_id = $1`, a.Tenant.ID))
}

func TestDeleteRemovesEveryVersion(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	put(t, v, a, "GONE", randomValue())
	put(t, v, a, "GONE", randomValue())
	put(t, v, a, "KEPT", randomValue())

	require.NoError(t, v.Delete(t.Context(), a, "GONE"))
	require.Zero(t, count(t, `SELECT count(*) FROM secrets WHERE tenant_id = $1 AND name = 'GONE'`, a.Tenant.ID))
	_, err := v.Reveal(t.Context(), a.Tenant.ID, "GONE")
	requireNotFound(t, err)
	requireNotFound(t, v.Delete(t.Context(), a, "GONE"))
	requireNotFound(t, v.Delete(t.Context(), a, "not a name"))
	requireNotFound(t, v.Delete(t.Context(), newTenant(t), "GONE"), "a tenant without a data key")
	_, err = v.Reveal(t.Context(), a.Tenant.ID, "KEPT")
	require.NoError(t, err)

	// A new secret of the name starts over at version 1.
	require.Equal(t, 1, put(t, v, a, "GONE", randomValue()).Version)
}

func TestListPages(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	names := []string{"E", "A", "D", "B", "C"}
	for _, n := range names {
		put(t, v, a, n, randomValue())
	}
	put(t, v, a, "C", randomValue())

	var got []secrets.Metadata
	cursor := ""
	for range 10 {
		page, err := v.List(t.Context(), a, tenants.Page{Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Secrets), 2)
		got = append(got, page.Secrets...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	var listed []string
	for _, m := range got {
		listed = append(listed, fmt.Sprintf("%s@%d", m.Name, m.Version))
	}
	require.Equal(t, []string{"A@1", "B@1", "C@2", "D@1", "E@1"}, listed)

	for _, bad := range []string{"!!", "bm90IGEgbmFtZQ"} { // the latter is base64url("not a name")
		_, err := v.List(t.Context(), a, tenants.Page{Cursor: bad})
		require.ErrorIs(t, err, tenants.ErrInvalidCursor, bad)
	}
}

// PutTx composes with the caller's transaction: rolled back, nothing stays,
// not even a first data key, and a later Put still works.
func TestPutTxRollsBack(t *testing.T) {
	t.Parallel()
	v, a := newVault(t), newTenant(t)
	tx, err := pgtest.Pool(t).Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	md, err := v.PutTx(t.Context(), tx, a, "TX", "in-tx")
	require.NoError(t, err)
	require.Equal(t, 1, md.Version)
	require.NoError(t, tx.Rollback(t.Context()))
	require.Zero(t, count(t, `SELECT count(*) FROM tenant_data_keys WHERE tenant_id = $1`, a.Tenant.ID))

	put(t, v, a, "TX", "after")
	got, err := newVault(t).Reveal(t.Context(), a.Tenant.ID, "TX")
	require.NoError(t, err)
	require.Equal(t, "after", got)
}

func requireNotFound(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	var nf *tenants.NotFoundError
	require.ErrorAs(t, err, &nf, msgAndArgs...)
	require.Equal(t, "secret", nf.Kind, msgAndArgs...)
}

// normalize drops monotonic clock readings so metadata compares by value.
func normalize(ms []secrets.Metadata) []secrets.Metadata {
	out := make([]secrets.Metadata, len(ms))
	for i, m := range ms {
		m.UpdatedAt = m.UpdatedAt.Round(0).UTC()
		out[i] = m
	}
	return out
}
