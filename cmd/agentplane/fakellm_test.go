package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent/llm"
)

// startFakeLLM runs `agentplane fakellm` on a free port and returns its
// base URL and a stop function that cancels it and returns run's error.
// The test's cleanup stops it too, so nothing outlives the test.
func startFakeLLM(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"fakellm", "--addr", "127.0.0.1:0"}, args...), pw)
		_ = pw.Close()
	}()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("fakellm did not stop on cancel")
		}
	})
	t.Cleanup(func() { require.NoError(t, stop()) })

	lines := bufio.NewReader(pr)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	url := regexp.MustCompile(`http://\S+/v1`).FindString(line)
	require.NotEmpty(t, url, "the URL is printed: %q", line)
	return url, stop
}

func TestFakeLLMServesCompletionsUntilCancelled(t *testing.T) {
	t.Parallel()
	url, stop := startFakeLLM(t)

	resp, err := llm.New(llm.Config{MaxRetries: -1}).Complete(t.Context(),
		llm.Endpoint{BaseURL: url, Model: "demo"},
		llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello there"}}}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "Hello! You said: hello there", resp.Content)
	require.Equal(t, "scripted-1", resp.Model)
	require.NoError(t, stop())
}

func TestFakeLLMScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`[
		{"tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "/workspace"}}]},
		{"content": "two files", "chunk_delay": "1ms", "usage": {"input_tokens": 7, "output_tokens": 2}}
	]`), 0o600))
	url, _ := startFakeLLM(t, "--script", script)

	c := llm.New(llm.Config{MaxRetries: -1})
	ep := llm.Endpoint{BaseURL: url, Model: "demo"}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "list"}}}
	resp, err := c.Complete(t.Context(), ep, req, nil, nil)
	require.NoError(t, err)
	require.Equal(t, []llm.ToolCall{{ID: "c1", Name: "ls", Arguments: `{"path": "/workspace"}`}}, resp.ToolCalls)

	resp, err = c.Complete(t.Context(), ep, req, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "two files", resp.Content)
	require.Equal(t, llm.Usage{InputTokens: 7, OutputTokens: 2, TotalTokens: 9}, resp.Usage)
}

func TestFakeLLMRejectsABadScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`[{"contnet": "typo"}]`), 0o600))
	err := run(t.Context(), []string{"fakellm", "--addr", "127.0.0.1:0", "--script", script}, io.Discard)
	require.ErrorContains(t, err, `unknown field "contnet"`)

	require.NoError(t, os.WriteFile(script, []byte(`[{"delay": "soon"}]`), 0o600))
	err = run(t.Context(), []string{"fakellm", "--addr", "127.0.0.1:0", "--script", script}, io.Discard)
	require.ErrorContains(t, err, "reply 0: delay")
}
