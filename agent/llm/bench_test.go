package llm_test

import (
	"testing"

	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
)

// BenchmarkCompleteParallel measures a streamed completion with a tool
// call against the scripted server, many at a time over pooled connections.
func BenchmarkCompleteParallel(b *testing.B) {
	srv := llmtest.Start(b)
	srv.DisableRecording()
	c := llm.New(llm.Config{})
	ep := endpoint(srv)
	req := llm.Request{
		Tools:    []llm.Tool{{Name: "clock"}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "please use tool clock"}},
	}
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Complete(b.Context(), ep, req, func(string) {}, nil)
			if err != nil || len(resp.ToolCalls) != 1 {
				b.Errorf("resp %+v, err %v", resp, err)
				return
			}
		}
	})
}
