package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/migrations"
)

// AdminURLEnv names the variable pointing at a server where tests may create
// databases; it defaults to the local PostgreSQL as user postgres.
const AdminURLEnv = "AGENTPLANE_TEST_DATABASE_URL"

const defaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// templateLock serializes template creation across test packages.
const templateLock = 7_451_020_002

var (
	once    sync.Once
	dbURL   string
	pool    *pgxpool.Pool
	initErr error
)

// Main runs the package's tests and drops its database afterwards.
func Main(m *testing.M) {
	code := m.Run()
	if pool != nil {
		pool.Close()
		if err := dropDatabase(context.Background(), dbName(dbURL)); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	os.Exit(code)
}

// URL returns the connection URL of this test package's database.
func URL(t testing.TB) string {
	t.Helper()
	setup(t)
	return dbURL
}

// Pool returns a pool on this test package's database, shared by its tests.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	setup(t)
	return pool
}

// Tx begins a transaction on the package database that is rolled back when
// the test ends, for tests that need isolation without their own schema.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	tx, err := Pool(t).Begin(t.Context())
	if err != nil {
		t.Fatalf("pgtest: begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func setup(t testing.TB) {
	t.Helper()
	once.Do(func() { dbURL, pool, initErr = create(context.Background()) })
	if initErr != nil {
		t.Fatalf("pgtest: %v", initErr)
	}
}

func adminURL() string {
	if u := os.Getenv(AdminURLEnv); u != "" {
		return u
	}
	return defaultAdminURL
}

func create(ctx context.Context) (string, *pgxpool.Pool, error) {
	tmpl, err := ensureTemplate(ctx)
	if err != nil {
		return "", nil, err
	}
	name := "agentplane_test_" + randomSuffix()
	err = withAdmin(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmpl))
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	u := withDatabase(adminURL(), name)
	p, err := pgxpool.New(ctx, u)
	if err != nil {
		return "", nil, fmt.Errorf("open test pool: %w", err)
	}
	return u, p, nil
}

// ensureTemplate creates and migrates a template database named after a hash
// of the migration files, so a schema change gets a new template.
func ensureTemplate(ctx context.Context) (string, error) {
	name := "agentplane_tmpl_" + schemaHash()
	err := withAdmin(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, templateLock); err != nil {
			return err
		}
		defer func() { _, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, templateLock) }()
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		if err := dropStaleTemplates(ctx, conn); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return err
		}
		if err := migrate(ctx, withDatabase(adminURL(), name)); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("prepare template database: %w", err)
	}
	return name, nil
}

func dropStaleTemplates(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'agentplane_tmpl_%'`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, n := range names {
		_, _ = conn.Exec(ctx, "ALTER DATABASE "+n+" WITH IS_TEMPLATE false")
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+n)
	}
	return nil
}

func migrate(ctx context.Context, u string) error {
	p, err := pgxpool.New(ctx, u)
	if err != nil {
		return err
	}
	defer p.Close()
	return migrations.Apply(ctx, p, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func dropDatabase(ctx context.Context, name string) error {
	return withAdmin(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	})
}

func withAdmin(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, adminURL())
	if err != nil {
		return fmt.Errorf("connect to %s (set %s): %w", AdminURLEnv, AdminURLEnv, err)
	}
	defer func() { _ = conn.Close(ctx) }()
	return fn(conn)
}

func schemaHash() string {
	h := sha256.New()
	fsys := migrations.FS()
	names, _ := fs.Glob(fsys, "*.sql")
	sort.Strings(names)
	for _, n := range names {
		b, _ := fs.ReadFile(fsys, n)
		h.Write([]byte(n))
		h.Write(b)
	}
	fmt.Fprintf(h, "river:%d", migrations.RiverVersion)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func withDatabase(u, name string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return u
	}
	i := strings.LastIndex(u, "/"+cfg.Database)
	if i < 0 {
		return u
	}
	return u[:i+1] + name + u[i+1+len(cfg.Database):]
}

func dbName(u string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return ""
	}
	return cfg.Database
}

// Suffix returns a short random string for unique names in parallel tests.
func Suffix() string { return randomSuffix() }
