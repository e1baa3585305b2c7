package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgxlisten"
)

// Broker fans run events out to this process's subscribers. Every replica
// LISTENs on NotifyChannel, so an event stored by a worker anywhere wakes
// the SSE streams everywhere; subscribers then read the events from the
// table, which stays the source of truth (a lost notification only delays
// a stream until its next poll).
type Broker struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	mu     sync.Mutex
	subs   map[uuid.UUID]map[chan struct{}]struct{}
	done   chan struct{}
}

// NewBroker builds a broker; Start begins listening.
func NewBroker(pool *pgxpool.Pool, logger *slog.Logger) *Broker {
	return &Broker{pool: pool, logger: logger, subs: map[uuid.UUID]map[chan struct{}]struct{}{}}
}

// Start listens until ctx ends, reconnecting after failures.
func (b *Broker) Start(ctx context.Context) error {
	l := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			c, err := b.pool.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			return c.Hijack(), nil
		},
		LogError: func(ctx context.Context, err error) {
			if ctx.Err() != nil {
				return // shutting down
			}
			b.logger.WarnContext(ctx, "event listener", slog.String("error", err.Error()))
		},
		ReconnectDelay: time.Second,
	}
	l.Handle(NotifyChannel, pgxlisten.HandlerFunc(func(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
		b.dispatch(n.Payload)
		return nil
	}))
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		if err := l.Listen(ctx); err != nil && ctx.Err() == nil {
			b.logger.ErrorContext(ctx, "event listener stopped", slog.String("error", err.Error()))
		}
	}()
	return nil
}

// Wait blocks until the listener has stopped (after Start's ctx ended).
func (b *Broker) Wait() {
	if b.done != nil {
		<-b.done
	}
}

func (b *Broker) dispatch(payload string) {
	parts := strings.Split(payload, ":")
	if len(parts) != 3 {
		return
	}
	run, err := uuid.Parse(parts[1])
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[run] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// Subscribe returns a channel that receives a wake-up whenever the run has
// new events, and a function to unsubscribe.
func (b *Broker) Subscribe(run uuid.UUID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[run] == nil {
		b.subs[run] = map[chan struct{}]struct{}{}
	}
	b.subs[run][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs[run], ch)
		if len(b.subs[run]) == 0 {
			delete(b.subs, run)
		}
	}
}

// EventsAfter reads a run's events after seq for a stream that already
// passed authorization.
func (s *Service) EventsAfter(ctx context.Context, tenantID, runID uuid.UUID, after int64) ([]Event, error) {
	evs, err := s.eventsAfter(ctx, tenantID, runID, after, 1000)
	if err != nil {
		return nil, fmt.Errorf("stream events: %w", err)
	}
	return evs, nil
}
