package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
)

// barrier releases its waiters only once n of them have arrived.
type barrier struct {
	arrived sync.WaitGroup
	all     chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{all: make(chan struct{})}
	b.arrived.Add(n)
	go func() { b.arrived.Wait(); close(b.all) }()
	return b
}

func (b *barrier) wait(ctx context.Context, within time.Duration) error {
	b.arrived.Done()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(within):
		return errors.New("the other call never arrived: calls ran one after the other")
	}
}

func TestLoopToolCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	b := newBarrier(2)
	mk := func(name string) tools.Tool {
		return fnTool(name, func(ctx context.Context, _ tools.Call) (string, error) {
			if err := b.wait(ctx, 5*time.Second); err != nil {
				return "", err
			}
			return name + " ok", nil
		})
	}
	e := newRunEnv(t, mk("left"), mk("right"))
	e.model.Enqueue(toolReply(tc("c1", "left", "{}"), tc("c2", "right", "{}")), llmtest.Reply{Content: "both done"})
	r := e.start("run both")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)

	ms := e.runMessages(r.ID)
	require.Equal(t, []string{"user", "assistant", "tool", "tool", "assistant"}, roles(ms))
	res := toolMessages(ms)
	require.Equal(t, "c1", res[0].ToolCallID)
	require.Equal(t, "left", res[0].ToolName)
	require.Equal(t, "left ok", res[0].Content)
	require.Equal(t, "c2", res[1].ToolCallID)
	require.Equal(t, "right", res[1].ToolName)
	require.Equal(t, "right ok", res[1].Content)

	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	requireToolPairs(t, reqs[1])
	n := len(reqs[1].Messages)
	require.Equal(t, llm.Message{Role: "tool", Content: "left ok", ToolCallID: "c1", Name: "left"}, reqs[1].Messages[n-2])
	require.Equal(t, llm.Message{Role: "tool", Content: "right ok", ToolCallID: "c2", Name: "right"}, reqs[1].Messages[n-1])
}

func roles(ms []agent.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role
	}
	return out
}

func TestLoopToolErrorIsResult(t *testing.T) {
	t.Parallel()
	broken := fnTool("broken", func(context.Context, tools.Call) (string, error) {
		return "", errors.New("disk on fire")
	})
	e := newRunEnv(t, broken)
	e.model.Enqueue(toolReply(tc("c1", "broken", "{}")), llmtest.Reply{Content: "the tool failed, sorry"})
	r := e.start("try it")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, 2, r.Turns)

	res := eventFor(t, e.events(r.ID), agent.EventToolResult, "c1")
	require.Equal(t, true, res["is_error"])
	require.Contains(t, res["result"], "disk on fire")

	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Last()
	require.Equal(t, "tool", last.Role)
	require.Equal(t, "c1", last.ToolCallID)
	require.Contains(t, last.Content, "disk on fire")
}

func TestLoopToolOutputTruncated(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, unit string
	}{
		{"ascii", "x"},
		// A three-byte rune: 64 KiB falls inside one, and the cut must not
		// store half a character.
		{"multibyte", "€"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			big := strings.Repeat(tt.unit, 70000)
			huge := fnTool("huge", func(context.Context, tools.Call) (string, error) { return big, nil })
			e := newRunEnv(t, huge)
			e.model.Enqueue(toolReply(tc("c1", "huge", "{}")), llmtest.Reply{Content: "that was long"})
			r := e.start("dump it")
			require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)

			res := toolMessages(e.runMessages(r.ID))
			require.Len(t, res, 1)
			got := res[0].Content
			require.True(t, utf8.ValidString(got))
			body, marker, ok := strings.Cut(got, "\n[output truncated: ")
			require.True(t, ok, "no truncation marker")
			require.LessOrEqual(t, len(body), 64<<10)
			require.Greater(t, len(body), 64<<10-utf8.UTFMax)
			require.True(t, strings.HasPrefix(big, body))
			require.Contains(t, marker, fmt.Sprintf("%d-byte limit]", 64<<10))

			reqs := e.model.Requests()
			require.Len(t, reqs, 2)
			require.Equal(t, got, reqs[1].Last().Content, "the model sees the truncated result")
		})
	}
}

func TestLoopToolOutputExactlyAtLimitKept(t *testing.T) {
	t.Parallel()
	exact := strings.Repeat("y", 64<<10)
	tool := fnTool("exact", func(context.Context, tools.Call) (string, error) { return exact, nil })
	e := newRunEnv(t, tool)
	e.model.Enqueue(toolReply(tc("c1", "exact", "{}")), llmtest.Reply{Content: "ok"})
	r := e.start("go")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, exact, toolMessages(e.runMessages(r.ID))[0].Content)
}

// A tool's output is text for the model; bytes PostgreSQL cannot store in
// text (invalid UTF-8, NUL) must not fail the run.
func TestLoopToolBinaryOutput(t *testing.T) {
	t.Parallel()
	bin := fnTool("bin", func(context.Context, tools.Call) (string, error) { return "head \xff\xfe\x00 tail", nil })
	binErr := fnTool("binerr", func(context.Context, tools.Call) (string, error) { return "", errors.New("bad \xff\x00 error") })
	e := newRunEnv(t, bin, binErr)
	e.model.Enqueue(toolReply(tc("c1", "bin", "{}"), tc("c2", "binerr", "{}")), llmtest.Reply{Content: "ok"})
	r := e.start("read the binary")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	res := toolMessages(e.runMessages(r.ID))
	require.Len(t, res, 2)
	for _, m := range res {
		require.True(t, utf8.ValidString(m.Content))
		require.NotContains(t, m.Content, "\x00")
	}
	require.Contains(t, res[0].Content, "head")
	require.Contains(t, res[0].Content, "tail")
	require.Contains(t, res[1].Content, "error")
}

func TestLoopToolPanicIsResult(t *testing.T) {
	t.Parallel()
	bad := fnTool("bad", func(context.Context, tools.Call) (string, error) { panic("nil map write") })
	e := newRunEnv(t, bad, echoTool())
	e.model.Enqueue(toolReply(tc("c1", "bad", "{}"), tc("c2", "echo", `{"text":"still here"}`)), llmtest.Reply{Content: "recovered"})
	r := e.start("crash it")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	evs := e.events(r.ID)
	res := eventFor(t, evs, agent.EventToolResult, "c1")
	require.Equal(t, true, res["is_error"])
	require.Contains(t, res["result"], "panic")
	require.Equal(t, "echo: still here", eventFor(t, evs, agent.EventToolResult, "c2")["result"])
}

func TestLoopMalformedCalls(t *testing.T) {
	t.Parallel()
	var ran sync.Map
	echo := echoTool()
	inner := echo.Run
	echo.Run = func(ctx context.Context, c tools.Call) (string, error) {
		ran.Store(c.CallID, true)
		return inner(ctx, c)
	}
	e := newRunEnv(t, echo)
	e.model.Enqueue(
		toolReply(
			tc("c1", "nope", `{}`),
			tc("c2", "echo", `{"text": "unterminated`),
			tc("c3", "echo", `{}`),
			tc("c4", "echo", `{"text":"a","extra":1}`),
			tc("c5", "echo", `{"text":42}`),
			tc("c6", "echo", `["text"]`),
			tc("c7", "echo", `{"text":"fine"}`),
		),
		llmtest.Reply{Content: "some of that worked"},
	)
	r := e.start("go wild")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, 2, r.Turns)
	evs := e.events(r.ID)

	denied := eventFor(t, evs, agent.EventToolDenied, "c1")
	require.Equal(t, "visible", denied["gate"])
	require.Equal(t, "nope", denied["name"])
	require.Contains(t, denied["reason"], "nope")
	require.Empty(t, callResults(t, evs, agent.EventToolResult, "c1"), "a refusal is reported as tool.denied only")

	for id, want := range map[string]string{
		"c2": "not a JSON object",
		"c3": `missing required argument "text"`,
		"c4": `unknown argument "extra"`,
		"c5": `argument "text" must be of type string`,
		"c6": "not a JSON object",
	} {
		res := eventFor(t, evs, agent.EventToolResult, id)
		require.Equal(t, true, res["is_error"], id)
		require.Contains(t, res["result"], want, id)
		_, did := ran.Load(id)
		require.False(t, did, "call %s with bad arguments reached the tool", id)
	}
	require.Equal(t, "echo: fine", eventFor(t, evs, agent.EventToolResult, "c7")["result"])

	// Every call got a result the model sees, in call order.
	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	var ids []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			ids = append(ids, m.ToolCallID)
		}
	}
	require.Equal(t, []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}, ids)
	requireToolPairs(t, reqs[1])
	require.Contains(t, reqs[1].Messages[len(reqs[1].Messages)-7].Content, "not available")
}

func callResults(t *testing.T, evs []agent.Event, typ, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range ofType(evs, typ) {
		if d := data(t, ev); d["call_id"] == id {
			out = append(out, d)
		}
	}
	return out
}

// A deferred tool is not shown to the model; until tool_search promotes it,
// a call to it is refused and never runs (DESIGN §4, Visible and Executed).
func TestLoopDeferredToolRefused(t *testing.T) {
	t.Parallel()
	var ran bool
	hidden := fnTool("hidden", func(context.Context, tools.Call) (string, error) { ran = true; return "secret stuff", nil })
	hidden.Deferred = true
	e := newRunEnv(t, hidden, echoTool())
	e.model.Enqueue(toolReply(tc("c1", "hidden", "{}")), llmtest.Reply{Content: "could not"})
	r := e.start("guess the hidden tool")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.False(t, ran, "an unpromoted deferred tool ran")
	reqs := e.model.Requests()
	require.False(t, reqs[0].HasTool("hidden"))
	require.True(t, reqs[0].HasTool("echo"))
	denied := eventFor(t, e.events(r.ID), agent.EventToolDenied, "c1")
	require.Equal(t, "executed", denied["gate"])
	require.Equal(t, "hidden", denied["name"])
	require.Contains(t, reqs[1].Last().Content, "deferred")
}
