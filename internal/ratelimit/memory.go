package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is an in-process fixed-window Limiter for when Redis is off. Limits
// are per process, so N replicas allow up to N×Rate. It is safe for
// concurrent use and starts no goroutines.
type Memory struct {
	limit Limit
	now   func() time.Time // replaced in tests

	mu        sync.Mutex
	windows   map[string]window
	nextSweep time.Time
}

type window struct {
	count int
	reset time.Time // the window ends (and the key may be deleted) at reset
}

// NewMemory returns an empty Memory limiter. It panics if l is invalid
// (see Limit.Validate).
func NewMemory(l Limit) *Memory {
	mustValid(l)
	return &Memory{limit: l, now: time.Now, windows: make(map[string]window)}
}

// Allow implements Limiter. It fails only when ctx is already done.
func (m *Memory) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return false, 0, fmt.Errorf("ratelimit: memory allow: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now() // under the lock, so windows never start out of order
	m.sweep(now)

	w, ok := m.windows[key]
	if !ok || !now.Before(w.reset) {
		w = window{reset: now.Add(m.limit.Per)}
	}
	if w.count >= m.limit.Rate {
		return false, w.reset.Sub(now), nil
	}
	w.count++
	m.windows[key] = w
	return true, 0, nil
}

// sweep deletes every expired window, at most once per Limit.Per, so the map
// holds only keys seen in about the last two windows and the O(n) scan is
// amortized over at least a window's worth of calls.
func (m *Memory) sweep(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	for k, w := range m.windows {
		if !now.Before(w.reset) {
			delete(m.windows, k)
		}
	}
	m.nextSweep = now.Add(m.limit.Per)
}
