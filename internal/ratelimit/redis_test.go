package ratelimit

import (
	"context"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testRedis connects to the test Redis and returns a client closed at the end
// of the test and a random key prefix no other test shares. It fails (never
// skips) when Redis is unreachable: the full suite runs against real services.
func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	url := os.Getenv("AGENTPLANE_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	require.NoError(t, err, "parse AGENTPLANE_TEST_REDIS_URL")
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s is unreachable (%v): run scripts/services.sh, or set AGENTPLANE_TEST_REDIS_URL", opts.Addr, err)
	}
	return client, "agentplane:test:ratelimit:" + rand.Text() + ":"
}

func TestRedisConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T, l Limit) Limiter {
		client, prefix := testRedis(t)
		return NewRedis(client, prefix, l)
	})
}

func TestRedisPrefixesAreIndependent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, prefix := testRedis(t)
	l := Limit{Rate: 1, Per: time.Minute}
	login, api := NewRedis(client, prefix+"login:", l), NewRedis(client, prefix+"api:", l)

	ok, _, err := login.Allow(ctx, "alice")
	require.NoError(t, err)
	require.True(t, ok)
	ok, _, err = login.Allow(ctx, "alice")
	require.NoError(t, err)
	require.False(t, ok)
	ok, _, err = api.Allow(ctx, "alice")
	require.NoError(t, err)
	require.True(t, ok, "same key under another prefix has its own window")
}

func TestRedisKeyExpiresWithWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, prefix := testRedis(t)
	l := Limit{Rate: 1, Per: time.Minute + 500*time.Microsecond} // Redis gets 60001ms
	_, _, err := NewRedis(client, prefix, l).Allow(ctx, "k")
	require.NoError(t, err)
	ttl, err := client.PTTL(ctx, prefix+"k").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 55*time.Second, "key must carry the window's TTL")
	require.LessOrEqual(t, ttl, 60001*time.Millisecond, "Per is rounded up to whole milliseconds")

	l = Limit{Rate: 1, Per: time.Minute}
	require.NoError(t, client.Set(ctx, prefix+"stuck", 5, 0).Err()) // a counter that lost its TTL
	ok, retry, err := NewRedis(client, prefix, l).Allow(ctx, "stuck")
	require.NoError(t, err)
	require.False(t, ok)
	requireRetryIn(t, retry, l.Per)
	ttl, err = client.PTTL(ctx, prefix+"stuck").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "a counter without TTL is given one, never locks forever")
}

func TestRedisErrorIsReturned(t *testing.T) {
	t.Parallel()
	client, prefix := testRedis(t)
	lim := NewRedis(client, prefix, Limit{Rate: 1, Per: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, _, err := lim.Allow(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ok, "an error never allows; the caller picks fail-open or fail-closed")
}
