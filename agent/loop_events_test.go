package agent_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/tenants/usage"
)

func TestLoopEventSequence(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	e.model.Enqueue(
		llmtest.Reply{Content: "Let me echo that.", ToolCalls: []llm.ToolCall{tc("c1", "echo", `{"text":"ping"}`)},
			Usage: &llm.Usage{InputTokens: 20, OutputTokens: 7, TotalTokens: 27}},
		llmtest.Reply{Content: "The tool answered: echo: ping. All done here.", Model: "scripted-1-2026",
			Usage: &llm.Usage{InputTokens: 40, OutputTokens: 12, TotalTokens: 52}},
	)
	r := e.start("please echo ping")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)

	evs := e.events(r.ID)
	for i, ev := range evs {
		require.EqualValues(t, i+1, ev.Seq, "event %d (%s) out of sequence", i, ev.Type)
	}
	require.Equal(t, agent.EventRunQueued, evs[0].Type)
	require.Equal(t, agent.EventRunStarted, evs[1].Type)
	require.Equal(t, agent.EventRunCompleted, evs[len(evs)-1].Type)

	// Paging by sequence number resumes exactly after the given event.
	tail, err := e.svc.ListEvents(t.Context(), e.access, r.ID, 3, 1000)
	require.NoError(t, err)
	require.Equal(t, evs[3:], tail)

	// Deltas of each step concatenate to that step's completed content.
	deltas := map[float64]string{}
	for _, ev := range ofType(evs, agent.EventMessageDelta) {
		d := data(t, ev)
		deltas[d["step"].(float64)] += d["text"].(string)
	}
	completed := ofType(evs, agent.EventMessageCompleted)
	require.Len(t, completed, 2)
	for _, ev := range completed {
		d := data(t, ev)
		require.Equal(t, d["content"], deltas[d["step"].(float64)], "step %v", d["step"])
	}
	require.Equal(t, "Let me echo that.", deltas[1])
	require.Equal(t, "The tool answered: echo: ping. All done here.", deltas[2])
	first := data(t, completed[0])
	require.Equal(t, []any{map[string]any{"id": "c1", "name": "echo", "arguments": `{"text":"ping"}`}}, first["tool_calls"])

	// Tool events name the call.
	called := eventFor(t, evs, agent.EventToolCalled, "c1")
	require.Equal(t, "echo", called["name"])
	require.Equal(t, `{"text":"ping"}`, called["arguments"])
	result := eventFor(t, evs, agent.EventToolResult, "c1")
	require.Equal(t, "echo: ping", result["result"])
	require.Equal(t, false, result["is_error"])

	usageEvs := ofType(evs, agent.EventUsage)
	require.Len(t, usageEvs, 2)
	u1, u2 := data(t, usageEvs[0]), data(t, usageEvs[1])
	require.Equal(t, "lead:1", u1["call_key"])
	require.Equal(t, "lead", u1["caller"])
	require.Equal(t, llmtest.DefaultModel, u1["model"])
	require.EqualValues(t, 20, u1["input_tokens"])
	require.EqualValues(t, 7, u1["output_tokens"])
	require.EqualValues(t, 27, u1["total_tokens"])
	require.Contains(t, u1, "latency_ms")
	require.Equal(t, "lead:2", u2["call_key"])
	require.Equal(t, "scripted-1-2026", u2["model"])
	require.EqualValues(t, 52, u2["total_tokens"])

	done := data(t, evs[len(evs)-1])
	require.Equal(t, map[string]any{"status": agent.StatusSucceeded, "stop_reason": agent.StopEndTurn}, done)
}

func TestLoopCompletedEventCarriesError(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.Fail(401, "invalid_api_key"))
	r := e.start("hi")
	require.Equal(t, agent.StatusFailed, r.Status)
	evs := e.events(r.ID)
	done := data(t, evs[len(evs)-1])
	require.Equal(t, agent.StatusFailed, done["status"])
	require.NotContains(t, done, "stop_reason")
	require.Equal(t, r.Error, done["error"])
}

func TestLoopUsageLedger(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	e.model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{tc("c1", "echo", `{"text":"a"}`)}, Model: "scripted-1-0601",
			Usage: &llm.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 0, TotalTokens: 110}},
		llmtest.Reply{Content: "first done", Model: "scripted-1-0601",
			Usage: &llm.Usage{InputTokens: 130, OutputTokens: 5, TotalTokens: 135}},
	)
	r1 := e.start("one")
	require.Equal(t, agent.StatusSucceeded, r1.Status, r1.Error)

	recs := e.usage(r1.ID)
	require.Len(t, recs, 2, "one usage row per model call")
	keys := map[string]bool{}
	for _, rec := range recs {
		require.Equal(t, "lead", rec.Caller)
		require.Equal(t, "scripted-1-0601", rec.Model, "the model the response reported")
		require.Equal(t, "scripted", rec.Endpoint, "the endpoint's name")
		require.Equal(t, e.thread.ID, rec.ThreadID)
		require.Equal(t, agent.DefaultAgentName, rec.Agent)
		require.Equal(t, e.access.Principal.String(), rec.Principal)
		require.False(t, keys[rec.CallKey], "call key %s repeated", rec.CallKey)
		keys[rec.CallKey] = true
	}
	require.Equal(t, "lead:1", recs[0].CallKey)
	require.Equal(t, "lead:2", recs[1].CallKey)
	require.EqualValues(t, 110, recs[0].TotalTokens)
	require.EqualValues(t, 135, recs[1].TotalTokens)
	require.EqualValues(t, 245, r1.TotalTokens)
	require.EqualValues(t, 230, r1.InputTokens)
	require.EqualValues(t, 15, r1.OutputTokens)

	e.model.Enqueue(llmtest.Reply{Content: "second done", Usage: &llm.Usage{InputTokens: 200, OutputTokens: 20, TotalTokens: 220}})
	r2 := e.start("two")
	require.Equal(t, agent.StatusSucceeded, r2.Status, r2.Error)
	recs2 := e.usage(r2.ID)
	require.Len(t, recs2, 1)
	require.Equal(t, "lead:1", recs2[0].CallKey, "call keys are per run")
	require.Equal(t, llmtest.DefaultModel, recs2[0].Model)

	tot, err := usage.ThreadTotals(t.Context(), e.pool(), e.access.Tenant.ID, e.thread.ID)
	require.NoError(t, err)
	require.Equal(t, usage.Totals{InputTokens: 430, OutputTokens: 35, TotalTokens: 465, Calls: 3}, tot)
}
