package sandbox

import "time"

// Defaults for a zero Limits field.
const (
	DefaultWallTime    = 10 * time.Minute
	DefaultCPUTime     = 10 * time.Minute
	DefaultMemoryBytes = 2 << 30
	DefaultMaxProcs    = 256
	DefaultOutputBytes = 1 << 20
)

// WithDefaults fills zero fields with the package defaults.
func (l Limits) WithDefaults() Limits {
	if l.WallTime <= 0 {
		l.WallTime = DefaultWallTime
	}
	if l.CPUTime <= 0 {
		l.CPUTime = DefaultCPUTime
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.MaxProcs <= 0 {
		l.MaxProcs = DefaultMaxProcs
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultOutputBytes
	}
	return l
}

// wall is the wall-time limit for one call: the request's timeout when it
// is shorter than the limit.
func (l Limits) wall(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout < l.WallTime {
		return timeout
	}
	return l.WallTime
}
