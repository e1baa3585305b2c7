// Package ratelimit owns request rate limiting: the Limit type, the Limiter
// seam, and its two implementations — Redis (shared by every process; used
// whenever AGENTPLANE_REDIS_URL is set) and Memory (one process only; used
// when Redis is off). Console login attempts are its first caller; per-key
// API request limits come next.
//
// # Algorithm: fixed window
//
// Each key gets a counter that starts with the key's first request and lives
// for Limit.Per; up to Limit.Rate requests are allowed in it, the rest are
// refused with retryAfter = the time left in the window (the Redis key's
// TTL). A fixed window was chosen over a sliding window or GCRA because it is
// one INCR plus one PEXPIRE in Redis (O(1) memory per key, trivially atomic
// in a short Lua script), its retryAfter is exactly the key's TTL, and its
// guarantee — at most Rate per window — is easy to state and to test. The
// known cost is burstiness at window edges: a client can get up to 2×Rate
// through in a span of Per straddling two windows. That is acceptable for
// login throttling (the goal is to cap guessing, not to shape traffic); if
// API limits need smooth pacing, add a GCRA implementation behind the same
// Limiter interface and run it through the same conformance suite.
//
// # Invariants
//
//   - Never allows more than Limit.Rate requests per window per key, also
//     under concurrent callers (Redis: one Lua script per call; Memory: one
//     mutex).
//   - A refused call returns retryAfter in (0, Limit.Per]; an allowed call
//     returns 0. Refused calls do not extend the window.
//   - Keys are independent. Redis keys are prefix+key, so tests, tenants and
//     uses (login vs API) must pass distinct prefixes, e.g.
//     "agentplane:ratelimit:login:".
//   - Memory never grows without bound: expired windows are deleted lazily on
//     access and by a full sweep at most once per Limit.Per, so it holds only
//     keys seen in roughly the last two windows. It starts no goroutines and
//     needs no Close.
//
// # Errors: the caller decides fail-open or fail-closed
//
// Allow returns Redis and context errors (wrapped, without the key, since
// keys may hold e-mail addresses or IPs) together with allowed=false. This
// package never decides what an outage means: each caller must choose.
// The console fails closed for login (an error refuses the attempt); an API
// limiter may reasonably fail open and log. Constructors panic on an invalid
// Limit — validate configuration with Limit.Validate at wiring time.
//
// # Must never
//
// Log or store anything but the counter under the caller's key; callers pass
// bounded keys (a normalized account name, an IP, a key id), never secrets.
package ratelimit
