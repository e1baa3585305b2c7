package llm_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

// fastClient retries quickly so failure tests take milliseconds.
func fastClient(retries int) *llm.Client {
	return llm.New(llm.Config{
		MaxRetries:  retries,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
		Timeout:     10 * time.Second,
	})
}

func endpoint(srv *llmtest.Server) llm.Endpoint {
	return llm.Endpoint{BaseURL: srv.URL(), Model: "test-model", APIKey: "sk-test"}
}

func userRequest(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "be brief"},
		{Role: llm.RoleUser, Content: text},
	}}
}

func TestCompleteStreamsContentInOrder(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Content: "The quick brown fox jumps over the lazy dog.", Model: "scripted-2024-01-01"})

	var deltas []string
	resp, err := fastClient(0).Complete(t.Context(), endpoint(srv), userRequest("hi"),
		func(d string) { deltas = append(deltas, d) }, nil)
	require.NoError(t, err)
	require.Equal(t, "The quick brown fox jumps over the lazy dog.", resp.Content)
	require.Greater(t, len(deltas), 1, "content arrives in several deltas")
	require.Equal(t, resp.Content, join(deltas))
	require.Equal(t, llm.FinishStop, resp.FinishReason)
	require.Equal(t, "scripted-2024-01-01", resp.Model)
	require.Equal(t, 1, resp.Attempts)
	require.Positive(t, resp.Latency)
	require.Empty(t, resp.ToolCalls)
}

func TestCompleteAssemblesParallelToolCalls(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{ToolCalls: []llm.ToolCall{
		{ID: "call_a", Name: "read_file", Arguments: `{"path":"/workspace/notes.md"}`},
		{ID: "call_b", Name: "grep", Arguments: `{"pattern":"TODO","path":"/workspace"}`},
	}})

	var deltas int
	resp, err := fastClient(0).Complete(t.Context(), endpoint(srv), userRequest("look around"),
		func(string) { deltas++ }, nil)
	require.NoError(t, err)
	require.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	require.Equal(t, []llm.ToolCall{
		{ID: "call_a", Name: "read_file", Arguments: `{"path":"/workspace/notes.md"}`},
		{ID: "call_b", Name: "grep", Arguments: `{"pattern":"TODO","path":"/workspace"}`},
	}, resp.ToolCalls)
	require.Zero(t, deltas)
	require.Empty(t, resp.Content)
}

func TestCompletePassesInvalidArgumentsThrough(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command": "ls`}}})

	resp, err := fastClient(0).Complete(t.Context(), endpoint(srv), userRequest("x"), nil, nil)
	require.NoError(t, err)
	require.Equal(t, `{"command": "ls`, resp.ToolCalls[0].Arguments)
}

func TestCompleteReportsUsage(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Content: "ok", Usage: &llm.Usage{InputTokens: 1200, OutputTokens: 34, CacheReadTokens: 1024}})

	resp, err := fastClient(0).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
	require.NoError(t, err)
	require.Equal(t, llm.Usage{InputTokens: 1200, OutputTokens: 34, CacheReadTokens: 1024, TotalTokens: 1234}, resp.Usage)
}

func TestCompleteMapsLengthFinish(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Content: "truncated answ", FinishReason: "length"})

	resp, err := fastClient(0).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
	require.NoError(t, err)
	require.Equal(t, llm.FinishLength, resp.FinishReason)
	require.Equal(t, "truncated answ", resp.Content)
}

func TestCompleteSendsTheWireRequest(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	req := llm.Request{
		MaxTokens: 256,
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "weather?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "rain"},
		},
		Tools: []llm.Tool{
			{Name: "weather", Description: "current weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			{Name: "now", Description: "the time"},
		},
	}
	resp, err := fastClient(0).Complete(t.Context(), endpoint(srv), req, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "Done: rain", resp.Content, "demo behaviour answers a tool result")

	got := srv.Requests()
	require.Len(t, got, 1)
	require.Equal(t, "test-model", got[0].Model)
	require.Equal(t, "sk-test", got[0].APIKey)
	require.True(t, got[0].Stream)
	require.True(t, got[0].IncludeUsage)
	require.Equal(t, 256, got[0].MaxTokens)
	require.Equal(t, req.Messages, got[0].Messages)
	require.Len(t, got[0].Tools, 2)
	require.JSONEq(t, string(req.Tools[0].Parameters), string(got[0].Tools[0].Parameters))
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(got[0].Tools[1].Parameters))
}

func TestCompleteRejectsABadRequestWithoutCalling(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	c := fastClient(0)

	_, err := c.Complete(t.Context(), llm.Endpoint{BaseURL: srv.URL()}, userRequest("x"), nil, nil)
	require.ErrorContains(t, err, "no model")
	bad := userRequest("x")
	bad.Tools = []llm.Tool{{Name: "t", Parameters: json.RawMessage(`{`)}}
	_, err = c.Complete(t.Context(), endpoint(srv), bad, nil, nil)
	require.ErrorContains(t, err, "not valid JSON")
	require.Empty(t, srv.Requests())
}

func TestCompleteCancelledMidStreamReturnsPromptly(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Content: "first second third", ChunkDelay: time.Hour})

	ctx, cancel := context.WithCancel(t.Context())
	start := time.Now()
	_, err := fastClient(-1).Complete(ctx, endpoint(srv), userRequest("hi"), func(string) { cancel() }, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 5*time.Second)
}

func join(parts []string) string {
	var s string
	for _, p := range parts {
		s += p
	}
	return s
}
