package api_test

import (
	"testing"

	"github.com/agentplane/agentplane/internal/pgtest"
)

// TestMain gives the package its own migrated database and drops it afterwards.
func TestMain(m *testing.M) { pgtest.Main(m) }
