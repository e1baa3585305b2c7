package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidLimit is returned (wrapped) by Limit.Validate.
var ErrInvalidLimit = errors.New("ratelimit: invalid limit")

// Limit allows Rate requests per key in each window of length Per,
// e.g. Limit{Rate: 10, Per: time.Minute}.
type Limit struct {
	// Rate is the number of requests allowed per window; at least 1.
	Rate int
	// Per is the window length; at least 1ms (Redis expiry resolution).
	Per time.Duration
}

// Validate reports whether l can be enforced.
func (l Limit) Validate() error {
	if l.Rate < 1 {
		return fmt.Errorf("%w: rate %d must be at least 1", ErrInvalidLimit, l.Rate)
	}
	if l.Per < time.Millisecond {
		return fmt.Errorf("%w: per %s must be at least 1ms", ErrInvalidLimit, l.Per)
	}
	return nil
}

func (l Limit) String() string { return fmt.Sprintf("%d per %s", l.Rate, l.Per) }

// Limiter decides whether one more request for key may proceed now. When it
// may not, retryAfter is how long until it may; on error, allowed is false
// and the caller decides whether to fail open or closed.
type Limiter interface {
	Allow(ctx context.Context, key string) (allowed bool, retryAfter time.Duration, err error)
}

var (
	_ Limiter = (*Redis)(nil)
	_ Limiter = (*Memory)(nil)
)

func mustValid(l Limit) {
	if err := l.Validate(); err != nil {
		panic(err)
	}
}
