package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

// fakellm serves the scripted OpenAI-compatible model endpoint from
// agent/llmtest until ctx ends: the replies in --script first, then the
// demo behaviour.
func fakellm(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	script := fs.String("script", "", "JSON file with a list of replies to serve in order before the demo behaviour")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := llmtest.NewServer()
	srv.DisableRecording()
	scripted := 0
	if *script != "" {
		replies, err := readScript(*script)
		if err != nil {
			return fmt.Errorf("fakellm --script: %w", err)
		}
		srv.Enqueue(replies...)
		scripted = len(replies)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("fakellm --addr: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "fakellm: OpenAI-compatible endpoint at http://%s/v1 (model %q, %d scripted replies, then demo rules)\n",
		displayListenAddr(ln.Addr()), llmtest.DefaultModel, scripted)

	select {
	case err := <-served:
		return fmt.Errorf("fakellm: %w", err)
	case <-ctx.Done():
	}
	srv.Close()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(stopCtx); err != nil {
		return fmt.Errorf("fakellm: stop: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fakellm: %w", err)
	}
	return nil
}

// displayListenAddr swaps an unspecified host for loopback, so the printed
// URL works as is.
func displayListenAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
}

// scriptReply is a reply as written in a script file: snake_case fields,
// durations as strings ("250ms"), tool arguments as JSON values or text.
type scriptReply struct {
	Content   string `json:"content"`
	ToolCalls []struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
	Usage        *scriptUsage `json:"usage"`
	Model        string       `json:"model"`
	Delay        string       `json:"delay"`
	ChunkDelay   string       `json:"chunk_delay"`
	Status       int          `json:"status"`
	ErrorCode    string       `json:"error_code"`
	Body         string       `json:"body"`
	FinishReason string       `json:"finish_reason"`
	RetryAfter   string       `json:"retry_after"`
}

type scriptUsage struct {
	InputTokens     int64 `json:"input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	CacheReadTokens int64 `json:"cache_read_tokens"`
}

func readScript(path string) ([]llmtest.Reply, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var raw []scriptReply
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: want a JSON list of replies: %w", path, err)
	}
	replies := make([]llmtest.Reply, 0, len(raw))
	for i, r := range raw {
		reply, err := r.reply()
		if err != nil {
			return nil, fmt.Errorf("%s: reply %d: %w", path, i, err)
		}
		replies = append(replies, reply)
	}
	return replies, nil
}

func (r scriptReply) reply() (llmtest.Reply, error) {
	out := llmtest.Reply{
		Content: r.Content, Model: r.Model, Status: r.Status, ErrorCode: r.ErrorCode,
		Body: r.Body, FinishReason: r.FinishReason, RetryAfter: r.RetryAfter,
	}
	var err error
	if out.Delay, err = optionalDuration(r.Delay); err != nil {
		return out, fmt.Errorf("delay: %w", err)
	}
	if out.ChunkDelay, err = optionalDuration(r.ChunkDelay); err != nil {
		return out, fmt.Errorf("chunk_delay: %w", err)
	}
	if u := r.Usage; u != nil {
		out.Usage = &llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens}
	}
	for _, tc := range r.ToolCalls {
		args := string(tc.Arguments)
		var text string
		if json.Unmarshal(tc.Arguments, &text) == nil {
			args = text // arguments given as a JSON string hold the raw text
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return out, nil
}

func optionalDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}
