package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// SecretReader reveals a tenant's secret value; the vault implements it.
type SecretReader interface {
	Reveal(ctx context.Context, tenantID uuid.UUID, name string) (string, error)
}

// Inserter enqueues River jobs in the caller's transaction.
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Config tunes runs.
type Config struct {
	// LeaseTTL is how long a run's lease lives without a heartbeat; after
	// it a reaper hands the run to another worker.
	LeaseTTL time.Duration
	// MaxInputBytes bounds a run's input text.
	MaxInputBytes int
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.MaxInputBytes == 0 {
		c.MaxInputBytes = 256 << 10
	}
	return c
}

// Validate rejects settings that break an invariant.
func (c Config) Validate() error {
	if c.LeaseTTL < time.Second {
		return fmt.Errorf("lease ttl %s: must be at least 1s", c.LeaseTTL)
	}
	if c.MaxInputBytes < 1 {
		return fmt.Errorf("max input bytes %d: must be positive", c.MaxInputBytes)
	}
	return nil
}

// Service is the agent domain's use cases.
type Service struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	cfg     Config
	secrets SecretReader
	queue   Inserter
	stash   stash
	rt      Runtime
	// delivery tunes webhook delivery (delivery.go); zero means defaults.
	delivery DeliveryConfig
	// files is the host tree of threads' user-data (UseFiles); nil
	// disables uploads and downloads, and settlement finds nothing produced.
	files *fileTree
}

// NewService wires the service. The queue is set later with UseQueue because
// the River client is built from the workers, which need this service.
func NewService(pool *pgxpool.Pool, cfg Config, secrets SecretReader, logger *slog.Logger) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{pool: pool, logger: logger, cfg: cfg, secrets: secrets}, nil
}

// UseQueue sets the River client runs are enqueued on (wiring step).
func (s *Service) UseQueue(q Inserter) { s.queue = q }
