package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

var (
	// ErrContextLength means the prompt exceeds the model's context window.
	// It is never retried; the loop must shorten the conversation. The
	// error is also an [*APIError].
	ErrContextLength = errors.New("prompt exceeds the model's context window")
	// ErrUnreachable means the endpoint could not be reached: name
	// resolution, connecting (refused, no route, dial timeout) or the TLS
	// handshake failed. Retryable.
	ErrUnreachable = errors.New("model endpoint unreachable")
	// ErrTimeout means one attempt exceeded Config.Timeout. Retryable.
	ErrTimeout = errors.New("model request timed out")
	// ErrInterrupted means the connection dropped before a response, or
	// the stream broke or ended before its finish reason. Retryable while
	// no content delta has been delivered.
	ErrInterrupted = errors.New("model stream interrupted")
)

// maxBody is how much of a response body an [APIError] keeps.
const maxBody = 2 << 10

// APIError is an HTTP error response from the endpoint, an error event in
// its stream, or a body that is not a chat-completion stream at all.
type APIError struct {
	// Status is the HTTP status (200 for errors inside a stream and for
	// malformed bodies).
	Status int
	// Code and Type are the endpoint's error code and type, when it sent
	// them (e.g. "context_length_exceeded", "invalid_request_error").
	Code, Type string
	// Message is the endpoint's message, or a description of what was
	// wrong with the body.
	Message string
	// Body is the raw response body, truncated to 2 KiB.
	Body string
	// Retryable is true for 429 and 5xx.
	Retryable bool
	// RetryAfter is the wait the endpoint asked for (Retry-After or
	// retry-after-ms); 0 when it sent none.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model endpoint returned %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if msg != "" {
		b.WriteString(": " + msg)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrContextLength) true for context-window errors.
func (e *APIError) Is(target error) bool {
	return target == ErrContextLength && e.contextLength()
}

// contextPhrases are how OpenAI-compatible servers (OpenAI, Azure, vLLM,
// llama.cpp, Ollama, LiteLLM, Anthropic's compatibility layer) word a
// prompt that does not fit.
var contextPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"prompt is too long",
	"input is too long",
	"reduce the length of the messages",
	"exceeds the available context size",
}

func (e *APIError) contextLength() bool {
	if e.Code == "context_length_exceeded" {
		return true
	}
	if e.Status == http.StatusTooManyRequests || e.Status >= 500 {
		return false
	}
	msg := strings.ToLower(e.Message)
	for _, p := range contextPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// retryableStatus is the HTTP retry policy: rate limits and server errors.
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryable reports whether another attempt may succeed.
func retryable(err error) bool {
	if errors.Is(err, ErrContextLength) {
		return false
	}
	if apiErr, ok := errors.AsType[*APIError](err); ok {
		return apiErr.Retryable
	}
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTimeout) || errors.Is(err, ErrInterrupted)
}

func truncate(b []byte) string {
	if len(b) > maxBody {
		b = b[:maxBody]
	}
	return string(b)
}
