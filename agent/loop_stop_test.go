package agent_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

// alwaysEcho makes the model call echo on every request.
func alwaysEcho(usage *llm.Usage) llmtest.Rule {
	return llmtest.Rule{Reply: llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "echo", Arguments: `{"text":"again"}`}}, Usage: usage}}
}

func TestLoopMaxTurns(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	_, err := e.svc.CreateAgent(t.Context(), e.system(), agent.AgentInput{Name: "looper", MaxTurns: 2})
	require.NoError(t, err)
	e.model.AddRule(alwaysEcho(nil))
	r := e.startAgent("looper", "loop forever")
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Equal(t, agent.StopMaxTurns, r.StopReason)
	require.Contains(t, r.Error, "2 turns")
	require.Equal(t, 2, r.Turns)
	require.Len(t, e.model.Requests(), 2)
	requireToolPairs(t, e.model.Requests()[1])
	require.Len(t, e.usage(r.ID), 2)
	// Both turns' tool calls were answered before the run stopped.
	require.Len(t, toolMessages(e.runMessages(r.ID)), 2)

	evs := e.events(r.ID)
	done := data(t, evs[len(evs)-1])
	require.Equal(t, agent.StopMaxTurns, done["stop_reason"])
}

func TestLoopMaxTurnsUpdatedDefaultAgent(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	_, err := e.svc.UpdateAgent(t.Context(), e.system(), agent.DefaultAgentName, agent.AgentPatch{MaxTurns: ptr(1)})
	require.NoError(t, err)
	e.model.AddRule(alwaysEcho(nil))
	r := e.start("loop")
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Equal(t, agent.StopMaxTurns, r.StopReason)
	require.Len(t, e.usage(r.ID), 1)
}

func TestLoopFinalAnswerOnLastTurnSucceeds(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	_, err := e.svc.UpdateAgent(t.Context(), e.system(), agent.DefaultAgentName, agent.AgentPatch{MaxTurns: ptr(2)})
	require.NoError(t, err)
	e.model.Enqueue(llmtest.ToolThenAnswer("echo", `{"text":"a"}`, "final")...)
	r := e.start("go")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, agent.StopEndTurn, r.StopReason)
}

func TestLoopTokenBudget(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	_, err := e.svc.UpdateAgent(t.Context(), e.system(), agent.DefaultAgentName, agent.AgentPatch{TokenBudget: ptr(int64(100))})
	require.NoError(t, err)
	e.model.AddRule(alwaysEcho(&llm.Usage{InputTokens: 900, OutputTokens: 100, TotalTokens: 1000}))
	r := e.start("spend")
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Equal(t, agent.StopTokenBudget, r.StopReason)
	require.Contains(t, r.Error, "token budget")
	require.Len(t, e.model.Requests(), 1, "no call after the budget is spent")
	require.EqualValues(t, 1000, r.TotalTokens)
	require.Len(t, e.usage(r.ID), 1)
}

func TestLoopContextLengthExceeded(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.ContextLengthExceeded())
	r := e.start("hi")
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Equal(t, agent.StopModelLength, r.StopReason)
	require.Contains(t, r.Error, "context")
	require.Len(t, e.model.Requests(), 1, "a context-length error is not retried")
	require.Empty(t, e.usage(r.ID))
}

func TestLoopContextWindowCheckedBeforeCall(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	_, err := e.svc.UpdateModel(t.Context(), e.system(), "scripted", agent.ModelPatch{ContextWindow: ptr(10)})
	require.NoError(t, err)
	r := e.start(strings.Repeat("a long question ", 20))
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Equal(t, agent.StopModelLength, r.StopReason)
	require.Contains(t, r.Error, "context window of 10")
	require.Empty(t, e.model.Requests(), "the model is not called")
}

func TestLoopModelRetriesServerErrors(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.Fail(500, "server_error"), llmtest.Fail(500, "server_error"),
		llmtest.Reply{Content: "third time lucky", Usage: &llm.Usage{InputTokens: 5, OutputTokens: 3, TotalTokens: 8}})
	r := e.start("hi")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Len(t, e.model.Requests(), 3)

	errs := ofType(e.events(r.ID), agent.EventError)
	require.Len(t, errs, 2)
	for i, ev := range errs {
		d := data(t, ev)
		require.Equal(t, true, d["retrying"])
		require.EqualValues(t, i+1, d["attempt"])
		require.Contains(t, d["error"], "500")
	}
	recs := e.usage(r.ID)
	require.Len(t, recs, 1, "usage once per model call, not per attempt")
	require.EqualValues(t, 8, recs[0].TotalTokens)
}

func TestLoopModelFailures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		reply    *llmtest.Reply
		baseURL  func(t *testing.T) string
		wantErr  []string
		requests int
		retries  int
	}{
		{
			name: "unreachable", baseURL: closedPortURL,
			wantErr: []string{"unreachable"}, retries: 2,
		},
		{
			name: "garbage 200 body", reply: &llmtest.Reply{Body: "<html>definitely not json</html>"},
			wantErr: []string{"200", "not a chat-completion event stream", "definitely not json"}, requests: 1,
		},
		{
			name: "malformed stream", reply: &llmtest.Reply{Body: "data: {not json\n\n"},
			wantErr: []string{"200", "malformed"}, requests: 1,
		},
		{
			name: "unauthorized", reply: &llmtest.Reply{Status: 401, ErrorCode: "invalid_api_key", Content: "Incorrect API key provided"},
			wantErr: []string{"401", "Incorrect API key"}, requests: 1,
		},
		{
			name: "bad request", reply: &llmtest.Reply{Status: 400, ErrorCode: "invalid_request_error", Content: "tools[0] is invalid"},
			wantErr: []string{"400", "tools[0] is invalid"}, requests: 1,
		},
		{
			name: "rate limited until retries run out", reply: &llmtest.Reply{Status: 429, ErrorCode: "rate_limit_exceeded", RetryAfter: "0.01"},
			wantErr: []string{"429"}, requests: 3, retries: 2,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t)
			if tt.baseURL != nil {
				_, err := e.svc.UpdateModel(t.Context(), e.system(), "scripted", agent.ModelPatch{BaseURL: ptr(tt.baseURL(t))})
				require.NoError(t, err)
			}
			if tt.reply != nil {
				e.model.AddRule(llmtest.Rule{Reply: *tt.reply})
			}
			r := e.start("hi")
			require.Equal(t, agent.StatusFailed, r.Status)
			require.Empty(t, r.StopReason)
			for _, want := range tt.wantErr {
				require.Contains(t, r.Error, want)
			}
			require.Len(t, e.model.Requests(), tt.requests)
			evs := e.events(r.ID)
			require.Len(t, ofType(evs, agent.EventError), tt.retries)
			require.Empty(t, ofType(evs, agent.EventMessageCompleted))
			require.Empty(t, e.usage(r.ID))
			require.Equal(t, agent.EventRunCompleted, evs[len(evs)-1].Type)
		})
	}
}
