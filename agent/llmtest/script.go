package llmtest

import (
	"strings"
	"time"

	"github.com/agentplane/agentplane/agent/llm"
)

// DefaultModel is the model name replies report unless Reply.Model is set.
const DefaultModel = "scripted-1"

// Reply is one scripted response.
type Reply struct {
	// Content is the assistant text; for an error reply, the message.
	Content string
	// ToolCalls are returned as calls; an empty ID is generated.
	ToolCalls []llm.ToolCall
	// Usage is reported as is; nil computes it from text lengths
	// (about four characters a token).
	Usage *llm.Usage
	// Model is the reported model; default [DefaultModel].
	Model string
	// Delay is waited before the first byte (status and headers
	// included); ChunkDelay between streamed content and tool-call chunks.
	// A pending delay ends, dropping the connection, when the client goes
	// away or the server is closed.
	Delay, ChunkDelay time.Duration
	// Status other than 0 or 2xx makes an error response, with ErrorCode
	// as the error's code (e.g. "context_length_exceeded").
	Status    int
	ErrorCode string
	// Body, when set, is written raw instead of any protocol (garbage,
	// truncated streams), with Status or 200.
	Body string
	// FinishReason defaults to "tool_calls" with tool calls, else "stop".
	FinishReason string
	// RetryAfter is sent as the Retry-After header when set.
	RetryAfter string
}

// Rule answers the requests it matches.
type Rule struct {
	// Match selects requests; nil matches all. It runs under the
	// server's lock and must not call the Server.
	Match func(req ChatRequest) bool
	// Reply is the answer, unless Respond is set.
	Reply Reply
	// Respond builds the answer from the request (used by [DemoRules]).
	Respond func(req ChatRequest) Reply
	// Times is how many requests the rule answers; 0 means unlimited.
	Times int
}

func (r Rule) reply(req ChatRequest) Reply {
	if r.Respond != nil {
		return r.Respond(req)
	}
	return r.Reply
}

// ChatRequest is a decoded chat-completions request.
type ChatRequest struct {
	Model        string
	Messages     []llm.Message
	Tools        []llm.Tool
	Stream       bool
	IncludeUsage bool
	// MaxTokens is max_tokens or max_completion_tokens; 0 when unset.
	MaxTokens int
	// APIKey is the bearer token the client sent.
	APIKey string
}

// Last is the final message, or the zero Message.
func (r ChatRequest) Last() llm.Message {
	if len(r.Messages) == 0 {
		return llm.Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// LastUserText is the content of the latest user message.
func (r ChatRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleUser {
			return r.Messages[i].Content
		}
	}
	return ""
}

// HasTool reports whether the request offers the named tool.
func (r ChatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// LastUserContains matches requests whose last message is from the user
// and contains substr.
func LastUserContains(substr string) func(ChatRequest) bool {
	return func(req ChatRequest) bool {
		last := req.Last()
		return last.Role == llm.RoleUser && strings.Contains(last.Content, substr)
	}
}

// ToolThenAnswer scripts one tool round trip: a call to toolName with
// argsJSON, then final as the answer once the result is sent back.
func ToolThenAnswer(toolName, argsJSON, final string) []Reply {
	return []Reply{
		{ToolCalls: []llm.ToolCall{{Name: toolName, Arguments: argsJSON}}},
		{Content: final},
	}
}

// Fail is an error response with the given status and code.
func Fail(status int, code string) Reply {
	return Reply{Status: status, ErrorCode: code}
}

// ContextLengthExceeded is the error an endpoint sends for a prompt that
// does not fit the model.
func ContextLengthExceeded() Reply {
	return Reply{
		Status:    400,
		ErrorCode: "context_length_exceeded",
		Content: "This model's maximum context length is 8192 tokens. However, your messages resulted " +
			"in 9000 tokens. Please reduce the length of the messages.",
	}
}

// DemoRules is the default behaviour: after a tool result, answer
// "Done: <result>"; when tools are offered and the user says
// "use tool <name>", call that tool with {} arguments; otherwise answer
// the user with a short echo of their message.
func DemoRules() []Rule {
	return []Rule{
		{
			Match:   func(req ChatRequest) bool { return req.Last().Role == llm.RoleTool },
			Respond: func(req ChatRequest) Reply { return Reply{Content: "Done: " + req.Last().Content} },
		},
		{
			Match: func(req ChatRequest) bool {
				return req.Last().Role == llm.RoleUser && len(req.Tools) > 0 && requestedTool(req.Last().Content) != ""
			},
			Respond: func(req ChatRequest) Reply {
				name := requestedTool(req.Last().Content)
				return Reply{ToolCalls: []llm.ToolCall{{Name: name, Arguments: "{}"}}}
			},
		},
		{
			Match: func(req ChatRequest) bool { return req.Last().Role == llm.RoleUser },
			Respond: func(req ChatRequest) Reply {
				return Reply{Content: "Hello! You said: " + clip(req.Last().Content, 200)}
			},
		},
	}
}

// requestedTool finds <name> in "use tool <name>", case-insensitively.
func requestedTool(text string) string {
	words := strings.Fields(text)
	for i := 0; i+2 < len(words); i++ {
		if strings.EqualFold(words[i], "use") && strings.EqualFold(words[i+1], "tool") {
			return strings.Trim(words[i+2], ".,;:!?\"'`()")
		}
	}
	return ""
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
