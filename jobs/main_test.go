package jobs

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// logBuffer is a goroutine-safe sink for a JSON slog handler: River and the
// middleware log from their own goroutines while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes every JSON log line written so far.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// find returns the first line with message msg for which match holds.
func (b *logBuffer) find(t *testing.T, msg string, match func(map[string]any) bool) (map[string]any, bool) {
	t.Helper()
	for _, l := range b.lines(t) {
		if l["msg"] == msg && (match == nil || match(l)) {
			return l, true
		}
	}
	return nil, false
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
