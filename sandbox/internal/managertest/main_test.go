// Package managertest_test tests sandbox.Manager against PostgreSQL and
// the real host provider. It lives apart from package sandbox because that
// package's TestMain checks for goroutine leaks, which a shared test
// database pool would trip, while these tests need pgtest.Main to drop
// their database.
package managertest_test

import (
	"testing"

	"github.com/agentplane/agentplane/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
