package builtin_test

import (
	"testing"

	"github.com/agentplane/agentplane/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
