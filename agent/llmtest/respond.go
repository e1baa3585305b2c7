package llmtest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentplane/agentplane/agent/llm"
)

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *wireUsage    `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   wireUsage          `json:"usage"`
}

type completionChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

// respond writes reply in the form the request asked for.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, req ChatRequest, reply Reply) {
	ctx := r.Context()
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if !s.wait(ctx, reply.Delay) {
		panic(http.ErrAbortHandler) // drop the connection, as a dying server would
	}
	switch {
	case reply.Body != "":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(cmp.Or(reply.Status, http.StatusOK))
		_, _ = w.Write([]byte(reply.Body))
	case reply.Status != 0 && (reply.Status < 200 || reply.Status > 299):
		msg := cmp.Or(reply.Content, http.StatusText(reply.Status))
		writeError(w, reply.Status, errorType(reply.Status), reply.ErrorCode, msg)
	case req.Stream:
		s.stream(ctx, w, req, reply)
	default:
		writeJSON(w, cmp.Or(reply.Status, http.StatusOK), s.completion(req, reply))
	}
}

// stream writes the reply as chat.completion.chunk events: the role,
// content in about three pieces (ChunkDelay between pieces, not before
// the first), each tool call's name then its
// arguments in about three fragments, the finish reason, the usage chunk
// when asked for, and [DONE].
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, req ChatRequest, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(cmp.Or(reply.Status, http.StatusOK))
	flusher, _ := w.(http.Flusher)
	base := s.envelope(reply)
	first := true
	send := func(c chunk) bool {
		if !first && !s.wait(ctx, reply.ChunkDelay) {
			panic(http.ErrAbortHandler)
		}
		first = false
		b, _ := json.Marshal(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	with := func(d delta, finish *string) chunk {
		c := base
		c.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
		return c
	}

	empty := ""
	if !send(with(delta{Role: "assistant", Content: &empty}, nil)) {
		return
	}
	first = true // the role preamble does not count: no delay after it
	for _, piece := range split(reply.Content, 3) {
		if !send(with(delta{Content: &piece}, nil)) {
			return
		}
	}
	for i, tc := range s.toolCalls(reply) {
		head := wireToolCall{Index: &i, ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name}}
		if !send(with(delta{ToolCalls: []wireToolCall{head}}, nil)) {
			return
		}
		for _, frag := range split(tc.Arguments, 3) {
			part := wireToolCall{Index: &i, Function: wireFunction{Arguments: frag}}
			if !send(with(delta{ToolCalls: []wireToolCall{part}}, nil)) {
				return
			}
		}
	}
	finish := finishReason(reply)
	if !send(with(delta{}, &finish)) {
		return
	}
	if req.IncludeUsage {
		c := base
		c.Choices = []chunkChoice{}
		u := usage(req, reply)
		c.Usage = &u
		if !send(c) {
			return
		}
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

func (s *Server) completion(req ChatRequest, reply Reply) completion {
	env := s.envelope(reply)
	msg := wireMessage{Role: "assistant", Content: json.RawMessage("null")}
	if reply.Content != "" || len(reply.ToolCalls) == 0 {
		msg.Content, _ = json.Marshal(reply.Content)
	}
	for _, tc := range s.toolCalls(reply) {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{
			ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return completion{
		ID: env.ID, Object: "chat.completion", Created: env.Created, Model: env.Model,
		Choices: []completionChoice{{Message: msg, FinishReason: finishReason(reply)}},
		Usage:   usage(req, reply),
	}
}

// envelope is the id, object, created and model every chunk repeats.
func (s *Server) envelope(reply Reply) chunk {
	return chunk{
		ID:      fmt.Sprintf("chatcmpl-scripted-%d", s.seq.Add(1)),
		Object:  "chat.completion.chunk",
		Created: time.Now().Unix(),
		Model:   cmp.Or(reply.Model, DefaultModel),
	}
}

// toolCalls fills in missing ids.
func (s *Server) toolCalls(reply Reply) []llm.ToolCall {
	calls := append([]llm.ToolCall(nil), reply.ToolCalls...)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d", s.seq.Add(1))
		}
	}
	return calls
}

func finishReason(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// wait sleeps d unless the request or the server ends first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// split cuts s into at most n pieces of about equal rune counts.
func split(s string, n int) []string {
	runes := []rune(s)
	if len(runes) == 0 {
		return nil
	}
	size := (len(runes) + n - 1) / n
	var out []string
	for len(runes) > 0 {
		k := min(size, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}
