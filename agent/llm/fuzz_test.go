package llm_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

// FuzzCompleteBody feeds arbitrary response bodies to the client: it must
// return a response or an error, never panic or hang.
func FuzzCompleteBody(f *testing.F) {
	for _, seed := range []string{
		partialStream,
		partialStream + "data: [DONE]\n\n",
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":"{"}}]},"finish_reason":"tool_calls"}]}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1}]}}]}` + "\n\n",
		`data: {"error":{"message":"boom","code":500}}` + "\n\n",
		"data: [DONE]\n\n",
		"{}",
		"\x00\xff",
	} {
		f.Add(seed)
	}
	srv := llmtest.Start(f)
	srv.DisableRecording()
	c := llm.New(llm.Config{MaxRetries: -1})
	ep := endpoint(srv)
	f.Fuzz(func(t *testing.T, body string) {
		if body == "" {
			return
		}
		srv.Enqueue(llmtest.Reply{Body: body})
		resp, err := c.Complete(t.Context(), ep, userRequest("x"), func(string) {}, nil)
		if err == nil {
			require.NotEmpty(t, resp.FinishReason)
			return
		}
		var apiErr *llm.APIError
		require.True(t, errors.As(err, &apiErr) || errors.Is(err, llm.ErrInterrupted), "unexpected error %v", err)
	})
}
