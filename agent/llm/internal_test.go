package llm

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

func TestBackoffIsJitteredAndBounded(t *testing.T) {
	t.Parallel()
	c := New(Config{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	for attempt, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 3: 400 * time.Millisecond, 5: time.Second, 80: time.Second} {
		var distinct = map[time.Duration]bool{}
		for range 200 {
			d := c.backoff(attempt, ErrTimeout)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceiling, "attempt %d", attempt)
			distinct[d] = true
		}
		require.Greater(t, len(distinct), 1, "full jitter varies the wait")
	}
	rl := &APIError{Status: 429, Retryable: true, RetryAfter: 5 * time.Minute}
	require.Equal(t, 60*time.Second, c.backoff(1, rl), "Retry-After is capped")
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{}, 0},
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "7", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		require.Equal(t, tc.want, retryAfter(h, now), "%v", tc.header)
	}
}

func TestContextLengthDetection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  APIError
		want bool
	}{
		{APIError{Status: 400, Code: "context_length_exceeded"}, true},
		{APIError{Status: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, true},
		{APIError{Status: 200, Message: "the request exceeds the available context size"}, true},
		{APIError{Status: 400, Message: "invalid tool schema"}, false},
		{APIError{Status: 429, Message: "rate limit on context length tokens per minute"}, false},
		{APIError{Status: 500, Message: "maximum context length bug"}, false},
	} {
		require.Equal(t, tc.want, tc.err.Is(ErrContextLength), "%+v", tc.err)
	}
}

func TestAPIErrorMessage(t *testing.T) {
	t.Parallel()
	require.Equal(t, "model endpoint returned 429 (rate_limit_exceeded): slow down",
		(&APIError{Status: 429, Code: "rate_limit_exceeded", Message: "slow down"}).Error())
	require.Equal(t, "model endpoint returned 502: Bad Gateway", (&APIError{Status: 502}).Error())
}

func TestAssemblerWithoutIndexes(t *testing.T) {
	t.Parallel()
	frag := func(id, name, args string) openai.ChatCompletionStreamResponse {
		return openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{
			Delta: openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
				ID: id, Function: openai.FunctionCall{Name: name, Arguments: args},
			}}},
		}}}
	}
	var a assembler
	for _, c := range []openai.ChatCompletionStreamResponse{
		frag("a", "ls", ""), frag("", "", `{"path":`), frag("", "", `"/"}`),
		frag("b", "glob", `{"pattern":"*.go"}`),
	} {
		a.add(c, nil)
	}
	a.finish = "tool_calls"
	require.Equal(t, []ToolCall{
		{ID: "a", Name: "ls", Arguments: `{"path":"/"}`},
		{ID: "b", Name: "glob", Arguments: `{"pattern":"*.go"}`},
	}, a.response().ToolCalls)
}

func TestChatRequestUsesMaxCompletionTokensForReasoningModels(t *testing.T) {
	t.Parallel()
	req := Request{MaxTokens: 100, Messages: []Message{{Role: RoleUser, Content: "x"}}}
	for model, want := range map[string]string{
		"o3-mini":      `"max_completion_tokens":100`,
		"gpt-5":        `"max_completion_tokens":100`,
		"llama-3.1-8b": `"max_tokens":100`,
	} {
		w, err := chatRequest(Endpoint{BaseURL: "http://x/v1", Model: model}, req)
		require.NoError(t, err)
		b, err := json.Marshal(w)
		require.NoError(t, err)
		require.Contains(t, string(b), want, model)
	}
}
