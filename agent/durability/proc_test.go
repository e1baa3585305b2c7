package durability_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// child is this test binary running as a worker or API process.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	logs   *syncBuffer // stderr: the child's JSON logs
	exited chan struct{}
	stop   func() error // closes the child's stdin
}

// startChild starts a child of the given role on the test database. The
// test's cleanup stops it (gracefully, then by SIGKILL), fails the test on a
// data race in the child, and prints the child's logs when the test failed.
func startChild(t *testing.T, role, databaseURL string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+role, envDatabaseURL+"="+databaseURL)
	c := &child{t: t, cmd: cmd, lines: make(chan string, 64), logs: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout = &lineWriter{lines: c.lines}
	cmd.Stderr = c.logs
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	c.stop = stdin.Close
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(c.cleanup)
	return c
}

func (c *child) cleanup() {
	_ = c.stop()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.t.Errorf("%s child did not stop within 10s of its stdin closing; killing it", c.role())
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	logs := c.logs.String()
	if strings.Contains(logs, "WARNING: DATA RACE") {
		c.t.Errorf("data race in the %s child:\n%s", c.role(), logs)
	} else if c.t.Failed() {
		c.t.Logf("%s child (%s) logs:\n%s", c.role(), c.cmd.ProcessState, logs)
	}
}

func (c *child) role() string {
	for _, kv := range c.cmd.Env {
		if v, ok := strings.CutPrefix(kv, envChild+"="); ok {
			return v
		}
	}
	return "?"
}

// ready waits for the child's first stdout line (its ready signal).
func (c *child) ready(within time.Duration) string {
	c.t.Helper()
	select {
	case l := <-c.lines:
		return l
	case <-c.exited:
		c.t.Fatalf("%s child exited before it was ready (%s):\n%s", c.role(), c.cmd.ProcessState, c.logs.String())
	case <-time.After(within):
		c.t.Fatalf("%s child not ready within %s:\n%s", c.role(), within, c.logs.String())
	}
	return ""
}

// alive fails the test when the child has exited.
func (c *child) alive() {
	c.t.Helper()
	select {
	case <-c.exited:
		c.t.Fatalf("%s child exited unexpectedly (%s):\n%s", c.role(), c.cmd.ProcessState, c.logs.String())
	default:
	}
}

// kill sends SIGKILL and waits until the process is gone: no deferred
// function, shutdown hook or River stop runs in the child.
func (c *child) kill() {
	c.t.Helper()
	require.NoError(c.t, c.cmd.Process.Kill())
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s child still running 10s after SIGKILL", c.role())
	}
	st := c.cmd.ProcessState
	require.False(c.t, st.Exited(), "the child must die of the signal, not exit on its own: %s", st)
	require.False(c.t, st.Success())
}

// lineWriter splits a child's stdout into lines; exec copies into it from
// its own goroutine and Wait waits for the copy.
type lineWriter struct {
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default: // nobody reads this much; drop
		}
		w.buf = w.buf[i+1:]
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
