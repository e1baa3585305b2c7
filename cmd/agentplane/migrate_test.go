package main

import (
	"context"
	"io"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/migrations"
)

// emptyDatabase creates a database with no schema at all and drops it when
// the test ends; it returns its URL.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	admin := os.Getenv(pgtest.AdminURLEnv)
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	name := "agentplane_cmdtest_" + pgtest.Suffix()
	conn, err := pgx.Connect(t.Context(), admin)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	dbURL := emptyDatabase(t)
	pool, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	require.Error(t, migrations.Check(t.Context(), pool), "an empty database must not pass the check")

	require.NoError(t, run(t.Context(), []string{"migrate", "--database-url", dbURL, "--log-level", "error"}, io.Discard))
	require.NoError(t, migrations.Check(t.Context(), pool))

	// Applying again is a no-op, as when several replicas start together.
	require.NoError(t, run(t.Context(), []string{"migrate", "--database-url", dbURL, "--log-level", "error"}, io.Discard))
	require.NoError(t, migrations.Check(t.Context(), pool))
	var tenants int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM tenants`).Scan(&tenants))
	require.Zero(t, tenants)
}

func TestMigrateUnreachableDatabase(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), []string{"migrate", "--database-url", "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}, io.Discard)
	require.ErrorContains(t, err, "AGENTPLANE_DATABASE_URL")
}
