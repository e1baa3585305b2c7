package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

// RiverVersion is the River schema version this build runs against. Bump it
// deliberately together with the River module.
const RiverVersion = 8

// lockKey is the advisory lock that serializes migrations across replicas.
const lockKey = 7_451_020_001

// FS returns the embedded migration files (for sqlc and tests).
func FS() fs.FS { return files }

// Apply brings our schema and River's up to date. It holds a session advisory
// lock for the duration so replicas starting together migrate one at a time.
// The lock pins one pool connection while the migrations run on another, so
// the pool must allow at least two.
func Apply(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	if n := pool.Config().MaxConns; n < 2 {
		return fmt.Errorf("apply migrations: pool allows %d connection(s), need at least 2 (one holds the migration lock)", n)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire migration connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey)
	}()

	if err := applyGoose(ctx, pool, logger); err != nil {
		return err
	}
	return applyRiver(ctx, pool, logger)
}

func newProvider(pool *pgxpool.Pool) (*goose.Provider, func() error, error) {
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, files)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("goose provider: %w", err)
	}
	return p, db.Close, nil
}

func applyGoose(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	p, closeDB, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer func() { _ = closeDB() }()
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range results {
		logger.Info("migration applied", slog.String("source", r.Source.Path), slog.Duration("took", r.Duration))
	}
	return nil
}

func applyRiver(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{TargetVersion: RiverVersion})
	if err != nil {
		return fmt.Errorf("apply river migrations: %w", err)
	}
	for _, v := range res.Versions {
		logger.Info("river migration applied", slog.Int("version", v.Version))
	}
	return nil
}

// ErrPending reports that the database is behind this build.
var ErrPending = errors.New("migrations pending")

// Check returns ErrPending when any of our or River's migrations is not yet
// applied; /readyz uses it.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	p, closeDB, err := newProvider(pool)
	if err != nil {
		return err
	}
	defer func() { _ = closeDB() }()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if pending {
		return fmt.Errorf("%w: goose", ErrPending)
	}
	// rivermigrate reads river_migration as River itself does, so a database
	// without that table (or from before its line column) reads as version 0.
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	existing, err := m.ExistingVersions(ctx)
	if err != nil {
		return fmt.Errorf("check river migrations: %w", err)
	}
	riverVersion := 0
	if len(existing) > 0 {
		riverVersion = existing[len(existing)-1].Version
	}
	if riverVersion < RiverVersion {
		return fmt.Errorf("%w: river at %d, want %d", ErrPending, riverVersion, RiverVersion)
	}
	return nil
}
