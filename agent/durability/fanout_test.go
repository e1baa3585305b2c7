package durability_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/internal/pgtest"
)

// serverKeepalive is how often an idle stream re-reads the table anyway
// (api's keepalive); a stream that delivers sooner was woken by NOTIFY.
const serverKeepalive = 15 * time.Second

// liveWithin bounds how long a stream may take to deliver the next event.
const liveWithin = 10 * time.Second

// TestEventStreamFansOutAcrossProcesses opens a run's SSE stream on an API
// server in a child process, executes the run in this process, and shows
// the child's stream delivering the events live (while the run is still
// blocked mid-step) through PostgreSQL LISTEN/NOTIFY, ending at
// run.completed; a reconnect with Last-Event-ID gets exactly the rest.
func TestEventStreamFansOutAcrossProcesses(t *testing.T) {
	checkLeaks(t) // not parallel, see checkLeaks
	model := llmtest.Start(t)
	model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_gate", Name: "slow", Arguments: "{}"}}},
		llmtest.Reply{Content: "The gate opened and the run is complete."},
	)
	gate := make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gate) }) }
	t.Cleanup(release)
	// A lease far longer than the test: it is about streams, and a slow
	// heartbeat must not hand the run to a reaper.
	f := newFixture(t, model, "parent-executor", 30*time.Second, slowTool(func(ctx context.Context) (string, error) {
		select {
		case <-gate:
			return "opened", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	f.svc.UseQueue(noQueue{})

	replica := startChild(t, childAPI, pgtest.URL(t))
	addr, ok := strings.CutPrefix(replica.ready(30*time.Second), "listening ")
	require.True(t, ok)
	run, _, err := f.svc.CreateRun(t.Context(), f.access, f.thread.ID, agent.CreateRunInput{Input: "wait for the gate"})
	require.NoError(t, err)
	url := fmt.Sprintf("http://%s/v1/tenants/%s/runs/%s/events", addr, f.access.Tenant.Slug, run.ID)

	opened := time.Now()
	live := openStream(t, url, f.key, "")
	var frames []frame
	frames = append(frames, live.next(t))
	require.Equal(t, frame{ID: 1, Event: agent.EventRunQueued, Data: frames[0].Data}, frames[0])

	// Execute here; the child only reads the table and listens.
	execCtx, stopExec := context.WithCancel(context.WithoutCancel(t.Context()))
	var execErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		execErr = f.svc.Execute(execCtx, agent.RunArgs{TenantID: run.TenantID, RunID: run.ID})
	}()
	t.Cleanup(func() {
		stopExec()
		<-done
	})

	// Everything up to tool.called reaches the other process while the run
	// is still blocked in the tool.
	for frames[len(frames)-1].Event != agent.EventToolCalled {
		frames = append(frames, live.next(t))
	}
	select {
	case <-done:
		t.Fatalf("the run ended (%v) before the gate opened", execErr)
	default:
	}
	requireTypes(t, frames, agent.EventRunStarted, agent.EventUsage, agent.EventMessageCompleted)
	mid := frames[len(frames)-1].ID

	release()
	for frames[len(frames)-1].Event != agent.EventRunCompleted {
		frames = append(frames, live.next(t))
	}
	live.requireEnd(t)
	require.Less(t, time.Since(opened), serverKeepalive, "the stream followed the run before its first keepalive re-read, so NOTIFY woke it")
	select {
	case <-done:
		require.NoError(t, execErr)
	case <-time.After(liveWithin):
		t.Fatal("Execute did not return after the run completed")
	}
	requireTypes(t, frames, agent.EventToolResult, agent.EventMessageDelta)
	require.Equal(t, "succeeded", decode(t, json.RawMessage(frames[len(frames)-1].Data))["status"])

	// The stream is exactly the stored log: every event once, in order.
	stored := f.events(t, run)
	requireContiguous(t, stored)
	require.Equal(t, framesOf(stored), frames)

	// A reconnect resumes after Last-Event-ID and ends at run.completed.
	resumed := openStream(t, url, f.key, strconv.FormatInt(mid, 10))
	var rest []frame
	for len(rest) == 0 || rest[len(rest)-1].Event != agent.EventRunCompleted {
		rest = append(rest, resumed.next(t))
	}
	resumed.requireEnd(t)
	require.Equal(t, framesOf(stored[mid:]), rest)
}

// frame is one SSE event as a client sees it.
type frame struct {
	ID    int64
	Event string
	Data  string
}

func framesOf(evs []agent.Event) []frame {
	out := make([]frame, len(evs))
	for i, e := range evs {
		out[i] = frame{ID: e.Seq, Event: e.Type, Data: string(e.Data)}
	}
	return out
}

func requireTypes(t *testing.T, frames []frame, types ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range frames {
		seen[f.Event] = true
	}
	for _, typ := range types {
		require.True(t, seen[typ], "no %s frame in %v", typ, frames)
	}
}

// stream reads one SSE response.
type stream struct {
	body io.Closer
	r    *bufio.Reader
}

// openStream requests the events as SSE and checks the response head. Its
// reads end when the test does or after 30s, whichever comes first.
func openStream(t *testing.T, url, key, lastEventID string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// A private transport, so no idle connection outlives the test.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: %s: %s", url, res.Status, body)
	}
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	return &stream{body: res.Body, r: bufio.NewReader(res.Body)}
}

// next returns the next event frame, skipping comments (keepalives). It
// fails the test when none arrives within liveWithin.
func (s *stream) next(t *testing.T) frame {
	t.Helper()
	type result struct {
		f   frame
		err error
	}
	got := make(chan result, 1)
	go func() {
		f, err := s.read()
		got <- result{f, err}
	}()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return r.f
	case <-time.After(liveWithin):
		_ = s.body.Close() // ends the read
		<-got
		t.Fatalf("no event within %s", liveWithin)
	}
	return frame{}
}

// requireEnd checks that the server ended the stream after the last frame.
func (s *stream) requireEnd(t *testing.T) {
	t.Helper()
	_, err := s.read()
	require.ErrorIs(t, err, io.EOF, "the stream must end after run.completed")
}

// read parses one frame: "field: value" lines up to a blank line.
func (s *stream) read() (frame, error) {
	var f frame
	fields := 0
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && (line != "" || fields > 0) {
				return f, io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && fields > 0:
			if !json.Valid([]byte(f.Data)) {
				return f, fmt.Errorf("frame %d: data is not JSON: %q", f.ID, f.Data)
			}
			return f, nil
		case line == "", strings.HasPrefix(line, ":"):
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		fields++
		switch name {
		case "id":
			if f.ID, err = strconv.ParseInt(value, 10, 64); err != nil {
				return f, fmt.Errorf("bad id %q: %w", value, err)
			}
		case "event":
			f.Event = value
		case "data":
			if f.Data != "" {
				f.Data += "\n"
			}
			f.Data += value
		default:
			return f, fmt.Errorf("unexpected SSE field %q", name)
		}
	}
}
