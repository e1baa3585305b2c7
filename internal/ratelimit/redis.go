package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// allowScript counts one request in the window KEYS[1] and returns
// {count, pttl}. The window starts (PEXPIRE) when the counter is created; a
// counter found without a TTL is given one, so a key can never lock forever.
// ARGV[1] is the window length in milliseconds.
var allowScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// Redis is a fixed-window Limiter shared by every process using the same
// Redis and prefix. It is safe for concurrent use.
type Redis struct {
	client   redis.UniversalClient
	prefix   string
	limit    Limit
	windowMS int64
}

// NewRedis returns a Limiter storing one counter per key at prefix+key.
// It panics if l is invalid (see Limit.Validate). The caller owns client.
func NewRedis(client redis.UniversalClient, prefix string, l Limit) *Redis {
	mustValid(l)
	return &Redis{
		client:   client,
		prefix:   prefix,
		limit:    l,
		windowMS: int64((l.Per + time.Millisecond - 1) / time.Millisecond), // round up
	}
}

// Allow implements Limiter with one atomic script call.
func (r *Redis) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	res, err := allowScript.Run(ctx, r.client, []string{r.prefix + key}, r.windowMS).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("ratelimit: redis allow: %w", err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("ratelimit: redis allow: unexpected reply %v", res)
	}
	count, ttl := res[0], time.Duration(res[1])*time.Millisecond
	if count <= int64(r.limit.Rate) {
		return true, 0, nil
	}
	return false, min(max(ttl, time.Millisecond), r.limit.Per), nil
}
