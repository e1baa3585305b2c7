package migrations_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/migrations"
)

func TestApplyOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := newDatabase(t)

	require.ErrorIs(t, migrations.Check(ctx, pool), migrations.ErrPending)
	require.NoError(t, migrations.Apply(ctx, pool, discard()))
	require.NoError(t, migrations.Check(ctx, pool))

	current, target, err := gooseProvider(t, pool).GetVersions(ctx)
	require.NoError(t, err)
	require.Equal(t, target, current)
	require.Equal(t, migrations.RiverVersion, riverVersion(t, pool))
}

// TestCheckReportsPending covers the states /readyz can meet while a deploy
// is under way: each must read as ErrPending, never as a query failure.
func TestCheckReportsPending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, pool *pgxpool.Pool)
	}{
		{"empty database", func(*testing.T, *pgxpool.Pool) {}},
		{"ours applied, River absent", func(t *testing.T, pool *pgxpool.Pool) {
			_, err := gooseProvider(t, pool).Up(t.Context())
			require.NoError(t, err)
		}},
		{"ours behind, River current", func(t *testing.T, pool *pgxpool.Pool) {
			require.NoError(t, migrations.Apply(t.Context(), pool, discard()))
			_, err := gooseProvider(t, pool).Down(t.Context())
			require.NoError(t, err)
		}},
		{"River one step down", func(t *testing.T, pool *pgxpool.Pool) {
			require.NoError(t, migrations.Apply(t.Context(), pool, discard()))
			res, err := riverMigrator(t, pool).Migrate(t.Context(), rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{MaxSteps: 1})
			require.NoError(t, err)
			require.Len(t, res.Versions, 1)
			require.Equal(t, migrations.RiverVersion-1, riverVersion(t, pool))
		}},
		{"newest River row deleted", func(t *testing.T, pool *pgxpool.Pool) {
			require.NoError(t, migrations.Apply(t.Context(), pool, discard()))
			_, err := pool.Exec(t.Context(), `DELETE FROM river_migration WHERE line = 'main' AND version = $1`, migrations.RiverVersion)
			require.NoError(t, err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newDatabase(t)
			tt.setup(t, pool)
			require.ErrorIs(t, migrations.Check(t.Context(), pool), migrations.ErrPending)

			require.NoError(t, migrations.Apply(t.Context(), pool, discard()), "Apply must repair the state")
			require.NoError(t, migrations.Check(t.Context(), pool))
		})
	}
}

// TestEachMigrationAppliesOnPrevious migrates a fresh database to every
// version's predecessor and then to the version itself.
func TestEachMigrationAppliesOnPrevious(t *testing.T) {
	t.Parallel()
	sources := listSources(t)
	require.NotEmpty(t, sources)
	for i, src := range sources {
		t.Run(src.Path, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p := gooseProvider(t, newDatabase(t))
			if i > 0 {
				res, err := p.UpTo(ctx, sources[i-1].Version)
				require.NoError(t, err)
				require.Len(t, res, i)
			}
			res, err := p.UpTo(ctx, src.Version)
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.Equal(t, src.Version, res[0].Source.Version)
			v, err := p.GetDBVersion(ctx)
			require.NoError(t, err)
			require.Equal(t, src.Version, v)
		})
	}
}

// TestLastMigrationDownAndUp proves the newest file's down section undoes its
// up section exactly, and that it applies again afterwards.
func TestLastMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sources := listSources(t)
	last := sources[len(sources)-1]
	pool := newDatabase(t)
	p := gooseProvider(t, pool)

	if len(sources) > 1 {
		_, err := p.UpTo(ctx, sources[len(sources)-2].Version)
		require.NoError(t, err)
	}
	before := schema(t, pool)

	_, err := p.UpTo(ctx, last.Version)
	require.NoError(t, err)
	applied := schema(t, pool)
	require.NotEqual(t, before, applied, "%s changed nothing", last.Path)

	res, err := p.Down(ctx)
	require.NoError(t, err)
	require.Equal(t, last.Version, res.Source.Version)
	require.Equal(t, before, schema(t, pool), "down section of %s leaves objects behind", last.Path)

	_, err = p.UpTo(ctx, last.Version)
	require.NoError(t, err)
	require.Equal(t, applied, schema(t, pool))
}

func TestApplyTwiceIsNoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := newDatabase(t)

	var first bytes.Buffer
	require.NoError(t, migrations.Apply(ctx, pool, slog.New(slog.NewTextHandler(&first, nil))))
	require.Contains(t, first.String(), "migration applied")
	gooseRows, riverRows := versionRows(t, pool), riverVersion(t, pool)

	var second bytes.Buffer
	require.NoError(t, migrations.Apply(ctx, pool, slog.New(slog.NewTextHandler(&second, nil))))
	require.NotContains(t, second.String(), "migration applied")
	require.Equal(t, gooseRows, versionRows(t, pool))
	require.Equal(t, riverRows, riverVersion(t, pool))
	require.NoError(t, migrations.Check(ctx, pool))
}

// TestConcurrentApply is replicas starting together: each has its own pool,
// all succeed, and every migration is recorded exactly once.
func TestConcurrentApply(t *testing.T) {
	t.Parallel()
	const replicas = 4
	ctx := t.Context()
	u := databaseURL(t)

	pools := make([]*pgxpool.Pool, replicas)
	for i := range pools {
		pools[i] = openPool(t, u)
	}
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, pool := range pools {
		wg.Go(func() {
			<-start
			errs[i] = migrations.Apply(ctx, pool, discard())
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
	}

	counts := versionRows(t, pools[0])
	want := map[int64]int{0: 1} // goose's own baseline row
	for _, src := range listSources(t) {
		want[src.Version] = 1
	}
	require.Equal(t, want, counts)

	var riverRows, distinct int
	require.NoError(t, pools[0].QueryRow(ctx,
		`SELECT count(*), count(DISTINCT version) FROM river_migration WHERE line = 'main'`).Scan(&riverRows, &distinct))
	require.Equal(t, migrations.RiverVersion, riverRows)
	require.Equal(t, riverRows, distinct)
	require.NoError(t, migrations.Check(ctx, pools[0]))
}

// TestApplyNeedsTwoConnections: the lock pins one connection and goose needs
// another, so a one-connection pool must fail fast instead of hanging.
func TestApplyNeedsTwoConnections(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(databaseURL(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	pool := openPool(t, u.String())
	require.EqualValues(t, 1, pool.Config().MaxConns)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = migrations.Apply(ctx, pool, discard())
	require.ErrorContains(t, err, "at least 2")
	require.NotErrorIs(t, err, context.DeadlineExceeded)
}

// --- helpers ---

func adminURL() string {
	if u := os.Getenv("AGENTPLANE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// databaseURL creates an empty database dropped when the test ends.
func databaseURL(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "agentplane_test_mig_" + hex.EncodeToString(b)

	admin, err := pgx.Connect(t.Context(), adminURL())
	require.NoError(t, err, "connect to the admin database (set AGENTPLANE_TEST_DATABASE_URL)")
	defer func() { _ = admin.Close(context.Background()) }()
	_, err = admin.Exec(t.Context(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, adminURL())
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})

	u, err := url.Parse(adminURL())
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

func newDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return openPool(t, databaseURL(t))
}

func openPool(t *testing.T, u string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(u)
	require.NoError(t, err)
	cfg.MaxConns = min(cfg.MaxConns, 4) // stay well inside max_connections with tests in parallel
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func gooseProvider(t *testing.T, pool *pgxpool.Pool) *goose.Provider {
	t.Helper()
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS())
	require.NoError(t, err)
	return p
}

func listSources(t *testing.T) []*goose.Source {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, &sql.DB{}, migrations.FS())
	require.NoError(t, err)
	return p.ListSources()
}

func riverMigrator(t *testing.T, pool *pgxpool.Pool) *rivermigrate.Migrator[pgx.Tx] {
	t.Helper()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: discard()})
	require.NoError(t, err)
	return m
}

func riverVersion(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	versions, err := riverMigrator(t, pool).ExistingVersions(t.Context())
	require.NoError(t, err)
	if len(versions) == 0 {
		return 0
	}
	return versions[len(versions)-1].Version
}

// versionRows counts goose_db_version rows per version.
func versionRows(t *testing.T, pool *pgxpool.Pool) map[int64]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT version_id, count(*) FROM goose_db_version GROUP BY version_id`)
	require.NoError(t, err)
	defer rows.Close()
	counts := map[int64]int{}
	for rows.Next() {
		var v int64
		var n int
		require.NoError(t, rows.Scan(&v, &n))
		counts[v] = n
	}
	require.NoError(t, rows.Err())
	return counts
}

// schema lists the public schema's objects (relations, columns, constraints,
// functions, types) other than goose's bookkeeping, as sorted lines.
func schema(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
SELECT 'rel ' || c.relkind::text || ' ' || c.relname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'public' AND c.relname NOT LIKE 'goose_db_version%'
UNION ALL
SELECT 'col ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
  FROM information_schema.columns
 WHERE table_schema = 'public' AND table_name <> 'goose_db_version'
UNION ALL
SELECT 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint
 WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> 'goose_db_version'
UNION ALL
SELECT 'fn ' || p.oid::regprocedure::text
  FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
UNION ALL
SELECT 'type ' || t.typname
  FROM pg_type t
 WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd', 'c', 'r')
   AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.reltype = t.oid)
UNION ALL
SELECT 'ext ' || extname FROM pg_extension
ORDER BY 1`)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return lines
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
