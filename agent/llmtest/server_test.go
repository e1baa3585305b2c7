package llmtest_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func complete(t *testing.T, srv *llmtest.Server, req llm.Request) llm.Response {
	t.Helper()
	resp, err := llm.New(llm.Config{MaxRetries: -1}).Complete(t.Context(),
		llm.Endpoint{BaseURL: srv.URL(), Model: "m"}, req, nil, nil)
	require.NoError(t, err)
	return resp
}

func say(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func TestQueueComesBeforeRulesAndRulesInOrder(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.AddRule(llmtest.Rule{Match: llmtest.LastUserContains("ping"), Reply: llmtest.Reply{Content: "pong once"}, Times: 1})
	srv.AddRule(llmtest.Rule{Match: llmtest.LastUserContains("ping"), Reply: llmtest.Reply{Content: "pong"}})
	srv.AddRule(llmtest.Rule{Reply: llmtest.Reply{Content: "catch-all"}, Times: 1})
	srv.Enqueue(llmtest.Reply{Content: "queued 1"}, llmtest.Reply{Content: "queued 2"})

	var got []string
	for _, text := range []string{"ping", "ping", "ping", "ping", "hello", "hello"} {
		got = append(got, complete(t, srv, say(text)).Content)
	}
	require.Equal(t, []string{"queued 1", "queued 2", "pong once", "pong", "catch-all", "Hello! You said: hello"}, got)
	require.Len(t, srv.Requests(), 6)
	require.EqualValues(t, 6, srv.Served())
}

func TestDemoRules(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	tools := []llm.Tool{{Name: "clock", Description: "the time"}}

	resp := complete(t, srv, llm.Request{Tools: tools, Messages: []llm.Message{{Role: llm.RoleUser, Content: "Please use tool clock."}}})
	require.Len(t, resp.ToolCalls, 1)
	call := resp.ToolCalls[0]
	require.Equal(t, "clock", call.Name)
	require.JSONEq(t, `{}`, call.Arguments)
	require.NotEmpty(t, call.ID)

	resp = complete(t, srv, llm.Request{Tools: tools, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "Please use tool clock."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
		{Role: llm.RoleTool, ToolCallID: call.ID, Content: "12:00"},
	}})
	require.Equal(t, "Done: 12:00", resp.Content)
	require.Equal(t, llm.FinishStop, resp.FinishReason)

	resp = complete(t, srv, say("use tool clock")) // no tools offered
	require.Equal(t, "Hello! You said: use tool clock", resp.Content)
	require.Positive(t, resp.Usage.InputTokens)
	require.Positive(t, resp.Usage.OutputTokens)

	resp = complete(t, srv, llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "x"}}})
	require.Equal(t, "OK.", resp.Content)
}

func TestRespondBuildsRepliesFromTheRequest(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.AddRule(llmtest.Rule{Respond: func(req llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Content: fmt.Sprintf("%d messages, %d tools", len(req.Messages), len(req.Tools))}
	}})
	require.Equal(t, "1 messages, 0 tools", complete(t, srv, say("x")).Content)
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	const n = 50
	srv.AddRule(llmtest.Rule{Match: llmtest.LastUserContains("limited"), Reply: llmtest.Reply{Content: "limited"}, Times: 10})
	for i := range 20 {
		srv.Enqueue(llmtest.Reply{Content: fmt.Sprintf("queued %d", i), ChunkDelay: time.Millisecond})
	}

	c := llm.New(llm.Config{MaxRetries: -1})
	ep := llm.Endpoint{BaseURL: srv.URL(), Model: "m"}
	results := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := c.Complete(t.Context(), ep, say(fmt.Sprintf("limited %d", i)), nil, nil)
			if err != nil {
				results <- "error: " + err.Error()
				return
			}
			results <- resp.Content
		})
	}
	wg.Wait()
	close(results)

	counts := map[string]int{}
	for r := range results {
		switch {
		case r == "limited":
			counts["rule"]++
		case len(r) > 6 && r[:6] == "queued":
			counts["queue"]++
			counts[r]++
		case len(r) > 5 && r[:5] == "Hello":
			counts["demo"]++
		default:
			t.Errorf("unexpected reply %q", r)
		}
	}
	require.Equal(t, 20, counts["queue"])
	require.Equal(t, 10, counts["rule"])
	require.Equal(t, 20, counts["demo"])
	for i := range 20 {
		require.Equal(t, 1, counts[fmt.Sprintf("queued %d", i)], "each queued reply is used once")
	}
	require.Len(t, srv.Requests(), n)
}

func TestDisableRecording(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.DisableRecording()
	complete(t, srv, say("x"))
	require.Empty(t, srv.Requests())
	require.EqualValues(t, 1, srv.Served())
}

func TestCloseEndsPendingDelays(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Delay: time.Hour})
	errs := make(chan error, 1)
	go func() {
		_, err := llm.New(llm.Config{MaxRetries: -1}).Complete(t.Context(),
			llm.Endpoint{BaseURL: srv.URL(), Model: "m"}, say("x"), nil, nil)
		errs <- err
	}()
	require.Eventually(t, func() bool { return srv.Served() == 1 }, 5*time.Second, 5*time.Millisecond)
	srv.Close()
	select {
	case err := <-errs:
		require.ErrorIs(t, err, llm.ErrInterrupted, "the connection is dropped")
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the delayed reply")
	}
}
