package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runConformance is the contract every Limiter implementation must meet.
// newLimiter returns a fresh limiter with no state shared with other calls.
func runConformance(t *testing.T, newLimiter func(t *testing.T, l Limit) Limiter) {
	t.Helper()
	ctx := context.Background()
	long := time.Minute // for cases that must not see a window roll over

	t.Run("AllowsUpToRateThenRefuses", func(t *testing.T) {
		t.Parallel()
		l := Limit{Rate: 3, Per: long}
		lim := newLimiter(t, l)
		for i := range l.Rate {
			ok, retry, err := lim.Allow(ctx, "k")
			require.NoError(t, err)
			require.True(t, ok, "request %d of %d", i+1, l.Rate)
			require.Zero(t, retry)
		}
		for range 2 { // refused calls keep being refused, never extend past Per
			ok, retry, err := lim.Allow(ctx, "k")
			require.NoError(t, err)
			require.False(t, ok)
			requireRetryIn(t, retry, l.Per)
		}
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		t.Parallel()
		lim := newLimiter(t, Limit{Rate: 2, Per: long})
		for _, key := range []string{"a", "a"} {
			ok, _, err := lim.Allow(ctx, key)
			require.NoError(t, err)
			require.True(t, ok)
		}
		ok, _, err := lim.Allow(ctx, "a")
		require.NoError(t, err)
		require.False(t, ok, "a is exhausted")
		for _, key := range []string{"b", "b", "ab", ""} {
			ok, _, err := lim.Allow(ctx, key)
			require.NoError(t, err)
			require.True(t, ok, "key %q must not share a's window", key)
		}
	})

	t.Run("NewWindowAllowsAgain", func(t *testing.T) {
		t.Parallel()
		l := Limit{Rate: 2, Per: 250 * time.Millisecond}
		lim := newLimiter(t, l)
		for range l.Rate {
			ok, _, err := lim.Allow(ctx, "k")
			require.NoError(t, err)
			require.True(t, ok)
		}
		start := time.Now() // before the refused call, so start+retry bounds the window's end
		ok, retry, err := lim.Allow(ctx, "k")
		require.NoError(t, err)
		require.False(t, ok)
		requireRetryIn(t, retry, l.Per)

		deadline := time.Now().Add(10 * l.Per)
		for {
			ok, _, err = lim.Allow(ctx, "k")
			require.NoError(t, err)
			if ok {
				break
			}
			require.True(t, time.Now().Before(deadline), "no new window within %s", 10*l.Per)
			time.Sleep(10 * time.Millisecond)
		}
		require.GreaterOrEqual(t, time.Since(start), retry-5*time.Millisecond,
			"allowed again before retryAfter elapsed")
		ok, _, err = lim.Allow(ctx, "k")
		require.NoError(t, err)
		require.True(t, ok, "the new window allows Rate again")
	})

	t.Run("ConcurrentNeverExceedsRate", func(t *testing.T) {
		t.Parallel()
		l := Limit{Rate: 7, Per: long}
		lim := newLimiter(t, l)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for range 5 {
					ok, retry, err := lim.Allow(ctx, "hot")
					if err != nil {
						t.Errorf("allow: %v", err)
						return
					}
					if ok {
						allowed.Add(1)
					} else if retry <= 0 || retry > l.Per {
						t.Errorf("retryAfter %s not in (0, %s]", retry, l.Per)
					}
				}
			})
		}
		wg.Wait()
		require.Equal(t, int64(l.Rate), allowed.Load(), "100 calls in one window must allow exactly Rate")
	})
}

func requireRetryIn(t *testing.T, retry, per time.Duration) {
	t.Helper()
	require.Greater(t, retry, time.Duration(0), "retryAfter must be positive")
	require.LessOrEqual(t, retry, per, "retryAfter must not exceed Per")
}
