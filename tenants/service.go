package tenants

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit"
)

// Config tunes the service.
type Config struct {
	// KeyCacheTTL is how long a verified API key is trusted without asking
	// the database again. It bounds how late a revocation takes effect in
	// another process, so it may not exceed 5 s.
	KeyCacheTTL time.Duration
	// SessionTTL is how long a console login lasts.
	SessionTTL time.Duration
	// PasswordCost is the bcrypt cost for new password hashes.
	PasswordCost int
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.KeyCacheTTL == 0 {
		c.KeyCacheTTL = 2 * time.Second
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.PasswordCost == 0 {
		c.PasswordCost = 12
	}
	return c
}

// Validate rejects settings that would break an invariant.
func (c Config) Validate() error {
	if c.KeyCacheTTL < 0 || c.KeyCacheTTL > 5*time.Second {
		return fmt.Errorf("key cache ttl %s: must be between 0 and 5s", c.KeyCacheTTL)
	}
	if c.SessionTTL < time.Minute {
		return fmt.Errorf("session ttl %s: must be at least 1m", c.SessionTTL)
	}
	if c.PasswordCost < bcrypt.MinCost || c.PasswordCost > bcrypt.MaxCost {
		return fmt.Errorf("password cost %d: must be between %d and %d", c.PasswordCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	return nil
}

// Service is the tenants use cases. Methods without a Tx suffix run in their
// own transaction; mutating ones append an audit event in it.
type Service struct {
	pool   *pgxpool.Pool
	cfg    Config
	logger *slog.Logger
	keys   *keyCache
}

// NewService wires the service to a pool.
func NewService(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{
		pool:   pool,
		cfg:    cfg,
		logger: logger,
		keys:   newKeyCache(cfg.KeyCacheTTL),
	}, nil
}

// Access is a principal's resolved standing in one tenant: the API and the
// console both obtain it before calling a tenant-scoped use case.
type Access struct {
	Principal policy.Principal
	Tenant    Tenant
	// Role is the principal's role in Tenant; empty for a platform admin
	// without a membership.
	Role policy.Role
}

// canGrant reports whether the caller may hand out role r.
func (a Access) canGrant(r policy.Role) bool {
	return a.Principal.PlatformAdmin || a.Role.AtLeast(r)
}

func (s *Service) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return pg.WithTx(ctx, s.pool, fn)
}

func (s *Service) record(ctx context.Context, tx pgx.Tx, a Access, action, targetKind, targetID string, diff map[string]any) error {
	err := audit.Record(ctx, tx, audit.Event{
		TenantID:   a.Tenant.ID,
		Actor:      a.Principal,
		Action:     action,
		TargetKind: targetKind,
		TargetID:   targetID,
		Diff:       diff,
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// notFound translates pgx.ErrNoRows into a named not-found error.
func notFound(err error, kind, key string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return &NotFoundError{Kind: kind, Key: key}
	}
	return err
}
