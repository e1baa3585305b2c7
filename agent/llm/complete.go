package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Complete makes one streamed chat completion against ep, retrying
// transient failures (429, 5xx, timeouts, unreachable endpoint, broken
// stream) with exponential backoff and full jitter, at most
// Config.MaxRetries times. Retry-After (or retry-after-ms) from the
// endpoint replaces the computed backoff.
//
// onDelta, when not nil, receives each content delta as it arrives.
// Because deltas cannot be taken back, an attempt that fails after
// delivering one is not retried: its error is returned and the caller
// decides (the partial text it saw is all there is). onRetry, when not
// nil, is called before each backoff wait. Both run on the caller's
// goroutine.
//
// The error is ctx.Err() when ctx ends; otherwise it wraps the last
// attempt's error, which matches [ErrContextLength], [ErrUnreachable],
// [ErrTimeout], [ErrInterrupted] or is an [*APIError]. Response.Attempts
// and Response.Latency are set on failure too.
func (c *Client) Complete(ctx context.Context, ep Endpoint, req Request, onDelta func(text string), onRetry func(RetryInfo)) (Response, error) {
	start := time.Now()
	wire, err := chatRequest(ep, req)
	if err != nil {
		return Response{}, fmt.Errorf("chat completion: %w", err)
	}
	for attempt := 1; ; attempt++ {
		resp, delivered, err := c.attempt(ctx, ep, wire, onDelta)
		resp.Attempts, resp.Latency = attempt, time.Since(start)
		if err == nil {
			return resp, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return resp, ctxErr
		}
		if delivered || attempt > c.cfg.MaxRetries || !retryable(err) {
			return resp, fmt.Errorf("chat completion with %s (attempt %d): %w", ep.Model, attempt, err)
		}
		wait := c.backoff(attempt, err)
		if onRetry != nil {
			onRetry(RetryInfo{Attempt: attempt, Wait: wait, Err: err})
		}
		if err := sleep(ctx, wait); err != nil {
			resp.Latency = time.Since(start)
			return resp, err
		}
	}
}

// backoff is the wait after the given failed attempt: the endpoint's
// Retry-After when it sent one, else a uniform draw from
// [0, min(MaxBackoff, BaseBackoff·2^(attempt-1))].
func (c *Client) backoff(attempt int, err error) time.Duration {
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.RetryAfter > 0 {
		return min(apiErr.RetryAfter, max(c.cfg.MaxBackoff, maxRetryAfter))
	}
	ceiling := c.cfg.MaxBackoff
	if shift := attempt - 1; shift < 30 {
		ceiling = min(ceiling, c.cfg.BaseBackoff<<shift)
	}
	return rand.N(ceiling + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// chatRequest maps a Request to the wire format.
func chatRequest(ep Endpoint, req Request) (openai.ChatCompletionRequest, error) {
	if ep.BaseURL == "" {
		return openai.ChatCompletionRequest{}, errors.New("endpoint has no base URL")
	}
	if ep.Model == "" {
		return openai.ChatCompletionRequest{}, errors.New("endpoint has no model")
	}
	w := openai.ChatCompletionRequest{
		Model:         ep.Model,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages:      make([]openai.ChatCompletionMessage, 0, len(req.Messages)),
	}
	if req.MaxTokens > 0 {
		// Reasoning models reject max_tokens; most compatible servers
		// (vLLM, llama.cpp, Ollama, older gateways) know only max_tokens.
		if reasoningModel(ep.Model) {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			//lint:ignore SA1019 deliberately the widely supported field.
			w.MaxTokens = req.MaxTokens
		}
	}
	for _, m := range req.Messages {
		wm := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		w.Messages = append(w.Messages, wm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if !json.Valid(params) {
			return w, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	return w, nil
}

func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}
