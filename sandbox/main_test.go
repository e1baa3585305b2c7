package sandbox

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// serverSecrets are set in the test process's own environment, as a
// server's would be; no command may ever see them.
var serverSecrets = map[string]string{
	"AGENTPLANE_X":   "agentplane-secret-value",
	"DATABASE_URL":   "postgres://user:pw@db/agentplane",
	"OPENAI_API_KEY": "sk-test-server-key",
}

// TestMain poisons the environment once for the whole package (t.Setenv
// would forbid t.Parallel) and checks no goroutine outlives the tests.
func TestMain(m *testing.M) {
	for k, v := range serverSecrets {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}
