package agent_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

func TestRunFinalAnswer(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.Reply{Content: "Hello there, friend.", Model: "scripted-1-2026", Usage: &llm.Usage{InputTokens: 11, OutputTokens: 5, TotalTokens: 16}})
	r := e.start("hi")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, agent.StopEndTurn, r.StopReason)
	require.Equal(t, 1, r.Turns)
	require.EqualValues(t, 16, r.TotalTokens)

	ts := types(e.events(r.ID))
	require.Equal(t, "run.queued", ts[0])
	require.Equal(t, "run.started", ts[1])
	require.Contains(t, ts, "message.delta")
	require.Equal(t, []string{"usage", "message.completed", "run.settled", "run.completed"}, ts[len(ts)-4:])

	msgs, err := e.svc.ListMessages(t.Context(), e.access, e.thread.ID, 0, 50)
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 2)
	require.Equal(t, "user", msgs.Messages[0].Role)
	require.Equal(t, "Hello there, friend.", msgs.Messages[1].Content)
}

func TestRunToolCallThenAnswer(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	e.model.Enqueue(llmtest.ToolThenAnswer("echo", `{"text":"ping"}`, "The tool said echo: ping")...)
	r := e.start("please echo ping")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, 2, r.Turns)
	evs := e.events(r.ID)
	var result map[string]any
	for _, ev := range evs {
		if ev.Type == agent.EventToolResult {
			result = data(t, ev)
		}
	}
	require.Equal(t, "echo: ping", result["result"])
	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	require.True(t, reqs[0].HasTool("echo"))
}

// A model that sends NUL bytes or invalid UTF-8 must not fail the run at
// the database (text and jsonb refuse both).
func TestRunModelOutputWithNULIsStored(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	e.model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c\x001", Name: "echo", Arguments: `{"text":"a\u0000b"}`}}},
		llmtest.Reply{Content: "done\x00 with \xff bytes"},
	)
	r := e.start("go")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	msgs, err := e.svc.ListMessages(t.Context(), e.access, e.thread.ID, 0, 50)
	require.NoError(t, err)
	last := msgs.Messages[len(msgs.Messages)-1]
	require.Equal(t, "done\uFFFD with \uFFFD bytes", last.Content)
}
