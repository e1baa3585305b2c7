package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T, l Limit) Limiter { return NewMemory(l) })
}

func TestMemorySweepsExpiredWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	m := NewMemory(Limit{Rate: 1, Per: time.Second})
	m.now = func() time.Time { return now }

	for i := range 1000 {
		ok, _, err := m.Allow(ctx, fmt.Sprintf("ip-%d", i))
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Len(t, m.windows, 1000)

	now = now.Add(time.Second) // every window has ended
	ok, _, err := m.Allow(ctx, "fresh")
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, m.windows, 1, "expired windows are swept, only the new key remains")
}

func TestMemoryCanceledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, _, err := NewMemory(Limit{Rate: 1, Per: time.Second}).Allow(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ok)
}

func TestLimitValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit Limit
		ok    bool
	}{
		{Limit{Rate: 10, Per: time.Minute}, true},
		{Limit{Rate: 1, Per: time.Millisecond}, true},
		{Limit{Rate: 0, Per: time.Minute}, false},
		{Limit{Rate: -1, Per: time.Minute}, false},
		{Limit{Rate: 1, Per: time.Millisecond - 1}, false},
		{Limit{Rate: 1, Per: 0}, false},
	} {
		t.Run(tc.limit.String(), func(t *testing.T) {
			err := tc.limit.Validate()
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidLimit)
			require.Panics(t, func() { NewMemory(tc.limit) })
		})
	}
}
