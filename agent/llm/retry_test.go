package llm_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

// retries records onRetry calls.
type retries []llm.RetryInfo

func (r *retries) record(info llm.RetryInfo) { *r = append(*r, info) }

func TestCompleteRetriesRateLimitHonouringRetryAfter(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(
		llmtest.Reply{Status: http.StatusTooManyRequests, ErrorCode: "rate_limit_exceeded", RetryAfter: "0.05"},
		llmtest.Reply{Content: "after the wait"},
	)
	var got retries
	resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, got.record)
	require.NoError(t, err)
	require.Equal(t, "after the wait", resp.Content)
	require.Equal(t, 2, resp.Attempts)
	require.Len(t, got, 1)
	require.Equal(t, 1, got[0].Attempt)
	require.Equal(t, 50*time.Millisecond, got[0].Wait, "Retry-After replaces the jittered backoff")
	apiErr, ok := errors.AsType[*llm.APIError](got[0].Err)
	require.True(t, ok)
	require.Equal(t, http.StatusTooManyRequests, apiErr.Status)
	require.Equal(t, "rate_limit_exceeded", apiErr.Code)
	require.True(t, apiErr.Retryable)
	require.Len(t, srv.Requests(), 2)
}

func TestCompleteGivesUpAfterMaxRetries(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.AddRule(llmtest.Rule{Reply: llmtest.Fail(http.StatusInternalServerError, "")})
	var got retries
	resp, err := fastClient(2).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, got.record)
	apiErr, ok := errors.AsType[*llm.APIError](err)
	require.True(t, ok, "got %v", err)
	require.Equal(t, http.StatusInternalServerError, apiErr.Status)
	require.Contains(t, apiErr.Body, "server_error")
	require.Equal(t, 3, resp.Attempts)
	require.Len(t, srv.Requests(), 3)
	require.Len(t, got, 2)
	for i, r := range got {
		require.Equal(t, i+1, r.Attempt)
		require.LessOrEqual(t, r.Wait, 5*time.Millisecond, "bounded by MaxBackoff")
	}
}

func TestCompleteDoesNotRetryClientErrors(t *testing.T) {
	t.Parallel()
	for name, reply := range map[string]llmtest.Reply{
		"context_length code": llmtest.ContextLengthExceeded(),
		"vllm wording": {Status: http.StatusBadRequest, Content: "This model's maximum context length is 4096 tokens. " +
			"However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.Start(t)
			srv.Enqueue(reply, llmtest.Reply{Content: "never reached"})
			var got retries
			resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, got.record)
			require.ErrorIs(t, err, llm.ErrContextLength)
			apiErr, ok := errors.AsType[*llm.APIError](err)
			require.True(t, ok)
			require.Equal(t, http.StatusBadRequest, apiErr.Status)
			require.False(t, apiErr.Retryable)
			require.Equal(t, 1, resp.Attempts)
			require.Empty(t, got)
		})
	}
	t.Run("other 4xx", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.Start(t)
		srv.Enqueue(llmtest.Fail(http.StatusUnauthorized, "invalid_api_key"))
		resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
		require.NotErrorIs(t, err, llm.ErrContextLength)
		apiErr, ok := errors.AsType[*llm.APIError](err)
		require.True(t, ok)
		require.Equal(t, "invalid_api_key", apiErr.Code)
		require.Equal(t, 1, resp.Attempts)
	})
}

func TestCompleteGarbageIsAnAPIError(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"html":           "<html><body>502 Bad Gateway</body></html>",
		"broken json":    "data: {\"id\": \"x\", \"choices\": [\n\n",
		"empty":          " ",
		"plain json 200": `{"hello": "world"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.Start(t)
			srv.Enqueue(llmtest.Reply{Body: body})
			resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
			apiErr, ok := errors.AsType[*llm.APIError](err)
			require.True(t, ok, "got %v", err)
			require.Equal(t, http.StatusOK, apiErr.Status)
			require.Equal(t, body, apiErr.Body)
			require.False(t, apiErr.Retryable)
			require.Equal(t, 1, resp.Attempts)
		})
	}
}

func TestCompleteErrorEventInStreamIsRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(
		llmtest.Reply{Body: `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"},
		llmtest.Reply{Content: "second try"},
	)
	resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
	require.NoError(t, err)
	require.Equal(t, "second try", resp.Content)
	require.Equal(t, 2, resp.Attempts)
}

const partialStream = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",` +
	`"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"

func TestCompleteNeverRetriesAfterADelta(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Body: partialStream}, llmtest.Reply{Content: "Hello"})
	var deltas []string
	resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"),
		func(d string) { deltas = append(deltas, d) }, nil)
	require.ErrorIs(t, err, llm.ErrInterrupted)
	require.Equal(t, []string{"Hel"}, deltas)
	require.Equal(t, 1, resp.Attempts)
}

func TestCompleteRetriesABrokenStreamWhenNothingWasDelivered(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Body: partialStream}, llmtest.Reply{Content: "Hello"})
	resp, err := fastClient(3).Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
	require.NoError(t, err)
	require.Equal(t, "Hello", resp.Content, "the partial attempt's text is discarded")
	require.Equal(t, 2, resp.Attempts)
}

func TestCompleteUnreachableEndpoint(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var got retries
	ep := llm.Endpoint{BaseURL: "http://" + addr + "/v1", Model: "m"}
	resp, err := fastClient(2).Complete(t.Context(), ep, userRequest("hi"), nil, got.record)
	require.ErrorIs(t, err, llm.ErrUnreachable)
	require.ErrorContains(t, err, "model endpoint unreachable")
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, 3, resp.Attempts)
	require.Len(t, got, 2)
}

func TestCompleteUntrustedTLSIsUnreachable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewUnstartedServer(llmtest.NewServer().Handler())
	hs.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	hs.StartTLS()
	t.Cleanup(hs.Close)
	ep := llm.Endpoint{BaseURL: hs.URL + "/v1", Model: "m"}
	_, err := fastClient(-1).Complete(t.Context(), ep, userRequest("hi"), nil, nil)
	require.ErrorIs(t, err, llm.ErrUnreachable)
	require.ErrorContains(t, err, "certificate")
}

func TestCompletePerAttemptTimeout(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Delay: time.Hour}, llmtest.Reply{Content: "quick"})
	c := llm.New(llm.Config{Timeout: 200 * time.Millisecond, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond})

	var got retries
	resp, err := c.Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, got.record)
	require.NoError(t, err)
	require.Equal(t, "quick", resp.Content)
	require.Equal(t, 2, resp.Attempts)
	require.Len(t, got, 1)
	require.ErrorIs(t, got[0].Err, llm.ErrTimeout)

	srv.Enqueue(llmtest.Reply{Delay: time.Hour})
	c = llm.New(llm.Config{Timeout: 200 * time.Millisecond, MaxRetries: -1})
	_, err = c.Complete(t.Context(), endpoint(srv), userRequest("hi"), nil, nil)
	require.ErrorIs(t, err, llm.ErrTimeout)
	require.ErrorContains(t, err, "timed out after 200ms")
}

func TestCompleteCancelledDuringBackoff(t *testing.T) {
	t.Parallel()
	srv := llmtest.Start(t)
	srv.Enqueue(llmtest.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "3600"})
	c := llm.New(llm.Config{MaxBackoff: time.Hour})

	ctx, cancel := context.WithCancel(t.Context())
	start := time.Now()
	_, err := c.Complete(ctx, endpoint(srv), userRequest("hi"), nil, func(info llm.RetryInfo) {
		require.Equal(t, time.Hour, info.Wait)
		cancel()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 5*time.Second)
}
