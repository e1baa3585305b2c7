package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentplane/agentplane/agent/llm"
)

// Wire types: the subset of the chat-completions protocol the server reads
// and writes, spelled as OpenAI spells it.

type wireRequest struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type modelList struct {
	Object string  `json:"object"`
	Data   []model `json:"data"`
}

type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

const maxRequestBody = 32 << 20

func decodeRequest(r *http.Request) (ChatRequest, error) {
	var w wireRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&w); err != nil {
		return ChatRequest{}, fmt.Errorf("request body is not valid JSON: %w", err)
	}
	if w.Model == "" {
		return ChatRequest{}, errors.New("model: required")
	}
	if len(w.Messages) == 0 {
		return ChatRequest{}, errors.New("messages: must not be empty")
	}
	req := ChatRequest{
		Model:        w.Model,
		Stream:       w.Stream,
		IncludeUsage: w.StreamOptions != nil && w.StreamOptions.IncludeUsage,
		MaxTokens:    max(w.MaxTokens, w.MaxCompletionTokens),
	}
	for i, m := range w.Messages {
		content, err := messageText(m.Content)
		if err != nil {
			return ChatRequest{}, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		msg := llm.Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, llm.Tool{
			Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters,
		})
	}
	return req, nil
}

// messageText reads content given as a string, null, or an array of
// parts, of which the text parts are joined.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var text string
	for _, p := range parts {
		if p.Type == "text" {
			text += p.Text
		}
	}
	return text, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes OpenAI's error envelope.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": c,
	}})
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// usage is the reply's usage, or one estimated at four characters a token.
func usage(req ChatRequest, r Reply) wireUsage {
	var u llm.Usage
	if r.Usage != nil {
		u = *r.Usage
	} else {
		for _, m := range req.Messages {
			u.InputTokens += 3 + tokens(m.Content)
			for _, tc := range m.ToolCalls {
				u.InputTokens += tokens(tc.Name) + tokens(tc.Arguments)
			}
		}
		u.OutputTokens = tokens(r.Content)
		for _, tc := range r.ToolCalls {
			u.OutputTokens += tokens(tc.Name) + tokens(tc.Arguments)
		}
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	w := wireUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	w.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	return w
}

func tokens(s string) int64 { return int64(len(s)+3) / 4 }
