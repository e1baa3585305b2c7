package builtin_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/builtin"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/sandbox"
)

func tc(id, name string, args any) llm.ToolCall {
	raw, _ := json.Marshal(args)
	return llm.ToolCall{ID: id, Name: name, Arguments: string(raw)}
}

// A run's model writes a report into outputs with bash and write_file,
// presents it, and the thread's artifact list has it; the sandbox is
// released (idle) when the run ends.
func TestRunWritesAndPresentsAFile(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{onHost, onBwrap} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testRunWritesAndPresents(t, newEnvOn(t, builtin.Config{}, kind))
		})
	}
}

func testRunWritesAndPresents(t *testing.T, e *env) {
	e.model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{
			tc("c1", "write_file", m{"path": "/mnt/user-data/outputs/report.md", "content": "# Report\n"}),
			tc("c2", "bash", m{"command": "mkdir -p /mnt/user-data/outputs/data && seq 3 > /mnt/user-data/outputs/data/n.txt"}),
		}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{
			tc("c3", "write_file", m{"path": "/mnt/user-data/outputs/report.md", "content": "Done.\n", "append": true}),
		}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{
			tc("c4", "present_files", m{"paths": []string{"/mnt/user-data/outputs/report.md", "outputs/data/n.txt"}}),
			tc("c5", "read_file", m{"path": "/mnt/user-data/outputs/report.md"}),
		}},
		llmtest.Reply{Content: "Your report is ready."},
	)
	r, created, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, agent.CreateRunInput{Input: "write me a report"})
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, e.svc.Execute(t.Context(), agent.RunArgs{TenantID: r.TenantID, RunID: r.ID}))
	r, err = e.svc.GetRun(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)

	o := sandbox.Outputs + "/"
	require.Equal(t, []string{o + "report.md", o + "data/n.txt"}, e.artifacts())

	evs, err := e.svc.ListEvents(t.Context(), e.access, r.ID, 0, 1000)
	require.NoError(t, err)
	results := map[string]map[string]any{}
	var presented int
	for _, ev := range evs {
		switch ev.Type {
		case agent.EventToolResult:
			var d map[string]any
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			results[d["call_id"].(string)] = d
		case agent.EventArtifactPresented:
			presented++
		}
	}
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		require.Equal(t, false, results[id]["is_error"], "%s: %v", id, results[id]["result"])
	}
	require.Equal(t, "(no output)\n[exit code: 0]", results["c2"]["result"])
	require.Equal(t, "# Report\nDone.\n", results["c5"]["result"])
	require.Contains(t, results["c4"]["result"], o+"data/n.txt")
	require.Equal(t, 1, presented)

	var status string
	var owner *string
	require.NoError(t, pool(t).QueryRow(t.Context(), `SELECT status, lease_owner FROM sandboxes WHERE tenant_id = $1 AND thread_id = $2`,
		e.access.Tenant.ID, e.thread.ID).Scan(&status, &owner))
	require.Equal(t, sandbox.StatusIdle, status, "released at run end, not destroyed")
	require.Nil(t, owner)

	// The model saw the sandbox tools.
	reqs := e.model.Requests()
	require.NotEmpty(t, reqs)
	var names []string
	for _, tl := range reqs[0].Tools {
		names = append(names, tl.Name)
	}
	require.Equal(t, []string{"bash", "read_file", "write_file", "edit_file", "ls", "glob", "grep", "present_files"}, names)
}
