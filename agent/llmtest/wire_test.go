package llmtest_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

func openaiClient(srv *llmtest.Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL()
	return openai.NewClientWithConfig(cfg)
}

func chatRequest(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessage{{Role: "user", Content: text}},
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
}

func TestStreamParsesWithGoOpenAI(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{
		Content: "Let me check two things.",
		ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "ls", Arguments: `{"path":"/workspace"}`},
			{Name: "bash", Arguments: `{"command":"go test ./..."}`},
		},
		Usage: &llm.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 4},
	})
	stream, err := openaiClient(srv).CreateChatCompletionStream(t.Context(), chatRequest("hi"))
	require.NoError(t, err)
	defer stream.Close()

	var (
		content, finish string
		contentChunks   int
		args            = map[int]string{}
		names           = map[int]string{}
		ids             = map[int]string{}
		usage           *openai.Usage
	)
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, "chat.completion.chunk", chunk.Object)
		require.Equal(t, llmtest.DefaultModel, chunk.Model)
		if chunk.Usage != nil {
			usage = chunk.Usage
			require.Empty(t, chunk.Choices)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				content += c.Delta.Content
				contentChunks++
			}
			for _, tc := range c.Delta.ToolCalls {
				require.NotNil(t, tc.Index)
				args[*tc.Index] += tc.Function.Arguments
				names[*tc.Index] += tc.Function.Name
				ids[*tc.Index] += tc.ID
			}
			if c.FinishReason != "" {
				finish = string(c.FinishReason)
			}
		}
	}
	require.Equal(t, "Let me check two things.", content)
	require.Equal(t, 3, contentChunks)
	require.Equal(t, map[int]string{0: `{"path":"/workspace"}`, 1: `{"command":"go test ./..."}`}, args)
	require.Equal(t, map[int]string{0: "ls", 1: "bash"}, names)
	require.Equal(t, "call_1", ids[0])
	require.NotEmpty(t, ids[1], "missing ids are generated")
	require.Equal(t, "tool_calls", finish)
	require.NotNil(t, usage)
	require.Equal(t, 10, usage.PromptTokens)
	require.Equal(t, 20, usage.CompletionTokens)
	require.Equal(t, 30, usage.TotalTokens)
	require.Equal(t, 4, usage.PromptTokensDetails.CachedTokens)
}

func TestStreamIsServerSentEvents(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Content: "abcdef"})
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), line)
		events = append(events, strings.TrimPrefix(line, "data: "))
	}
	require.Equal(t, "[DONE]", events[len(events)-1])
	require.NotContains(t, strings.Join(events, "\n"), `"usage"`, "no usage chunk unless include_usage")
}

func TestNonStreamingCompletion(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.ToolThenAnswer("weather", `{"city":"Oslo"}`, "It rains in Oslo.")...)
	c := openaiClient(srv)

	resp, err := c.CreateChatCompletion(t.Context(), chatRequest("weather in Oslo?"))
	require.NoError(t, err)
	require.Equal(t, "chat.completion", resp.Object)
	require.Equal(t, openai.FinishReasonToolCalls, resp.Choices[0].FinishReason)
	call := resp.Choices[0].Message.ToolCalls[0]
	require.Equal(t, "weather", call.Function.Name)
	require.Equal(t, `{"city":"Oslo"}`, call.Function.Arguments)
	require.Positive(t, resp.Usage.TotalTokens)

	resp, err = c.CreateChatCompletion(t.Context(), chatRequest("and now?"))
	require.NoError(t, err)
	require.Equal(t, "It rains in Oslo.", resp.Choices[0].Message.Content)
	require.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
}

func TestErrorRepliesUseTheOpenAIEnvelope(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.ContextLengthExceeded(), llmtest.Reply{Status: 429, RetryAfter: "2"})
	c := openaiClient(srv)

	_, err := c.CreateChatCompletionStream(t.Context(), chatRequest("long"))
	apiErr, ok := errors.AsType[*openai.APIError](err)
	require.True(t, ok, "got %v", err)
	require.Equal(t, http.StatusBadRequest, apiErr.HTTPStatusCode)
	require.Equal(t, "context_length_exceeded", apiErr.Code)
	require.Equal(t, "invalid_request_error", apiErr.Type)
	require.Contains(t, apiErr.Message, "maximum context length")

	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
}

func TestInvalidRequestsAreRejected(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	for _, body := range []string{`{`, `{"model":"m","messages":[]}`, `{"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":42}]}`} {
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	}
	require.Empty(t, srv.Requests())
}

func TestContentPartsAndModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	body := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}]}`
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "ab", srv.Requests()[0].Messages[0].Content)

	models, err := openaiClient(srv).ListModels(t.Context())
	require.NoError(t, err)
	require.Equal(t, llmtest.DefaultModel, models.Models[0].ID)
}
