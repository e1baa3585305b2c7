package ratelimit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if the limiters or the tests' Redis clients
// leave goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
