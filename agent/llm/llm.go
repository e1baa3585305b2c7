package llm

import (
	"encoding/json"
	"time"
)

// Endpoint is an OpenAI-compatible chat-completions endpoint.
type Endpoint struct {
	// BaseURL is the API root including its version, e.g.
	// "https://api.openai.com/v1"; "/chat/completions" is appended.
	BaseURL string
	// Model is the model name sent in each request.
	Model string
	// APIKey is sent as a bearer token; empty sends no Authorization header.
	APIKey string
}

// Roles of a [Message].
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Finish reasons the loop is likely to inspect. Others (such as
// "content_filter") are passed through unchanged.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// ToolCall is one call the model asked for.
type ToolCall struct {
	// ID pairs the call with its result message (Message.ToolCallID).
	ID string
	// Name is the tool's name as the model sent it.
	Name string
	// Arguments is the raw JSON text as the model sent it; it may be empty
	// or invalid, and is not checked here.
	Arguments string
}

// Message is one entry of the conversation sent to the model.
type Message struct {
	// Role is system, user, assistant or tool.
	Role    string
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID names the call a tool message answers.
	ToolCallID string
	// Name is an optional participant name.
	Name string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object; empty means no parameters.
	Parameters json.RawMessage
}

// Request is one model call.
type Request struct {
	Messages []Message
	Tools    []Tool
	// MaxTokens caps the completion; 0 leaves it to the endpoint.
	MaxTokens int
}

// Usage is the token usage the endpoint reported for one call.
// InputTokens includes CacheReadTokens, as the wire format counts them.
type Usage struct {
	InputTokens     int64
	OutputTokens    int64
	CacheReadTokens int64
	TotalTokens     int64
}

// Response is the assembled result of a call.
type Response struct {
	// Content is the concatenated text deltas.
	Content string
	// ToolCalls are assembled from the streamed fragments, in index order.
	ToolCalls []ToolCall
	// FinishReason is as the endpoint sent it: "stop", "tool_calls",
	// "length" (output cut at the token limit), "content_filter", ….
	FinishReason string
	// Model is the model the response reports, which may differ from the
	// requested name (aliases, dated versions).
	Model string
	// Usage is zero when the endpoint does not report usage.
	Usage Usage
	// Attempts is the number of HTTP requests made, 1 when no retry.
	Attempts int
	// Latency is the wall time of the whole call, retries included.
	Latency time.Duration
}

// RetryInfo describes a retry about to happen.
type RetryInfo struct {
	// Attempt is the number of the attempt that just failed (1-based).
	Attempt int
	// Wait is how long the client sleeps before the next attempt.
	Wait time.Duration
	// Err is why the attempt failed.
	Err error
}
