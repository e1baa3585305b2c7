package pgtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestPackageDatabaseIsMigrated(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	require.NoError(t, migrations.Check(t.Context(), pool))
}

func TestTxRollsBack(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	t.Run("write", func(t *testing.T) {
		tx := pgtest.Tx(t)
		_, err := tx.Exec(t.Context(), `INSERT INTO users (id, email) VALUES (gen_random_uuid(), 'rollback@example.com')`)
		require.NoError(t, err)
	})
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM users WHERE email = 'rollback@example.com'`).Scan(&n))
	require.Zero(t, n)
}
