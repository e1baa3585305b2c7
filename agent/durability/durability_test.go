package durability_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/jobs"
	"github.com/agentplane/agentplane/tenants/usage"
)

// TestKilledWorkerRunFinishesOnce runs a worker in a child process, kills it
// with SIGKILL between the run's two model calls (while it executes the
// tool the first call asked for), and shows a second worker, reached
// through the lease reaper, finishing the run: no message is duplicated
// and there is exactly one usage row per model call.
func TestKilledWorkerRunFinishesOnce(t *testing.T) {
	checkLeaks(t) // not parallel, see checkLeaks
	ctx := t.Context()
	model := llmtest.Start(t)
	model.Enqueue(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_slow", Name: "slow", Arguments: "{}"}},
			Usage: &llm.Usage{InputTokens: 20, OutputTokens: 5, TotalTokens: 25}},
		llmtest.Reply{Content: "done", Usage: &llm.Usage{InputTokens: 30, OutputTokens: 2, TotalTokens: 32}},
	)
	// This process's worker (started later) finds "slow" quick.
	f := newFixture(t, model, "parent-worker", leaseTTL, slowTool(func(context.Context) (string, error) { return "ok", nil }))
	insertOnly, err := river.NewClient(riverpgxv5.New(f.pool), &river.Config{})
	require.NoError(t, err)
	f.svc.UseQueue(insertOnly)

	first := startChild(t, childWorker, pgtest.URL(t))
	require.Equal(t, "ready", first.ready(30*time.Second))
	run, created, err := f.svc.CreateRun(ctx, f.access, f.thread.ID, agent.CreateRunInput{Input: "take your time"})
	require.NoError(t, err)
	require.True(t, created)

	// Model call 1 is persisted (its usage and message.completed precede
	// tool.called); the child now blocks in "slow" until it dies.
	waitFor(t, 30*time.Second, "the child to call the slow tool", func() bool {
		first.alive()
		return len(ofType(f.events(t, run), agent.EventToolCalled)) == 1
	})
	first.kill()

	before := f.events(t, run)
	require.Len(t, model.Requests(), 1, "exactly one model call before the kill")
	requireRunRow(t, f, run, agent.StatusRunning, 1, 1)
	require.Len(t, ofType(before, agent.EventUsage), 1)
	require.Empty(t, ofType(before, agent.EventToolResult), "the killed worker stored no tool result")

	// A second worker: its reaper finds the expired lease and re-enqueues
	// the run; its run worker resumes from the last persisted step.
	start := time.Now()
	second, err := jobs.New(f.pool, jobs.Config{Work: true, Workers: 4, ReapEvery: reapEvery, StopTimeout: 5 * time.Second},
		jobs.Services{Tenants: f.tenants, Agents: f.svc}, f.logger)
	require.NoError(t, err)
	require.NoError(t, second.Start(ctx))
	t.Cleanup(func() { require.NoError(t, second.Stop(context.WithoutCancel(ctx))) })
	var got agent.Run
	waitFor(t, 45*time.Second, "the second worker to finish the run", func() bool {
		got, err = f.svc.GetRun(ctx, f.access, run.ID)
		require.NoError(t, err)
		return got.Terminal()
	})
	t.Logf("second worker finished the run %s after the kill", time.Since(start).Round(time.Millisecond))
	require.Contains(t, f.logs.String(), "run lease expired; re-enqueued", "the run reached the second worker through the reaper")

	require.Equal(t, agent.StatusSucceeded, got.Status, got.Error)
	require.Equal(t, agent.StopEndTurn, got.StopReason)
	require.Equal(t, 2, got.Turns)
	require.EqualValues(t, 57, got.TotalTokens, "each call counted once")
	requireRunRow(t, f, run, agent.StatusSucceeded, 2, 2)
	requireOneOfEach(t, f, run)
	requireResumedEvents(t, f.events(t, run), before)

	// The model saw two calls, the second with the tool result appended
	// to the first call's conversation, not a replayed one.
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "take your time", reqs[0].LastUserText())
	last := reqs[1].Last()
	require.Equal(t, llm.RoleTool, last.Role)
	require.Equal(t, "ok", last.Content)
	require.Equal(t, "call_slow", last.ToolCallID)
}

// requireRunRow checks the run's status, persisted turns and lease epoch.
func requireRunRow(t *testing.T, f *fixture, run agent.Run, status string, turns, epoch int) {
	t.Helper()
	var (
		gotStatus string
		gotTurns  int
		gotEpoch  int64
		owner     *string
	)
	require.NoError(t, f.pool.QueryRow(t.Context(),
		`SELECT status, turns, lease_epoch, lease_owner FROM runs WHERE tenant_id = $1 AND id = $2`,
		run.TenantID, run.ID).Scan(&gotStatus, &gotTurns, &gotEpoch, &owner))
	require.Equal(t, status, gotStatus)
	require.Equal(t, turns, gotTurns)
	require.EqualValues(t, epoch, gotEpoch)
	require.NotNil(t, owner)
	if epoch == 1 {
		require.True(t, strings.HasPrefix(*owner, "child-worker:"), "owner %q", *owner)
	} else {
		require.Equal(t, "parent-worker", *owner)
	}
}

// requireOneOfEach checks the durable log and the usage ledger: every
// message and usage row of the run exists exactly once.
func requireOneOfEach(t *testing.T, f *fixture, run agent.Run) {
	t.Helper()
	type msg struct {
		Step, Idx           int
		Role, Content, Tool string
	}
	rows, err := f.pool.Query(t.Context(), `
		SELECT step, idx, role, content, coalesce(tool_name, tool_calls->0->>'name', '')
		FROM messages WHERE tenant_id = $1 AND run_id = $2 ORDER BY seq`, run.TenantID, run.ID)
	require.NoError(t, err)
	var msgs []msg
	for rows.Next() {
		var m msg
		require.NoError(t, rows.Scan(&m.Step, &m.Idx, &m.Role, &m.Content, &m.Tool))
		msgs = append(msgs, m)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []msg{
		{0, 0, "user", "take your time", ""},
		{1, 0, "assistant", "", "slow"},
		{1, 1, "tool", "ok", "slow"},
		{2, 0, "assistant", "done", ""},
	}, msgs)
	page, err := f.svc.ListMessages(t.Context(), f.access, f.thread.ID, 0, 50)
	require.NoError(t, err)
	require.Len(t, page.Messages, 4, "the thread's log as the API shows it")

	recs, err := usage.ForRun(t.Context(), f.pool, run.TenantID, run.ID)
	require.NoError(t, err)
	require.Len(t, recs, 2, "one usage row per model call")
	require.Equal(t, "lead:1", recs[0].CallKey)
	require.EqualValues(t, 25, recs[0].TotalTokens)
	require.Equal(t, "lead:2", recs[1].CallKey)
	require.EqualValues(t, 32, recs[1].TotalTokens)
}

// requireResumedEvents checks the event log across both workers: the
// killed worker's events are kept as they were, the second worker's follow
// with no gap in seq, and each model call's usage and message appear once.
func requireResumedEvents(t *testing.T, evs, before []agent.Event) {
	t.Helper()
	requireContiguous(t, evs)
	require.Equal(t, before, evs[:len(before)], "events stored before the kill are unchanged")
	require.Equal(t, agent.EventRunQueued, evs[0].Type)
	require.Equal(t, agent.EventRunCompleted, evs[len(evs)-1].Type)
	require.Equal(t, "succeeded", decode(t, evs[len(evs)-1].Data)["status"])
	require.Len(t, ofType(evs, agent.EventRunCompleted), 1)

	started := ofType(evs, agent.EventRunStarted)
	require.Len(t, started, 2, "one run.started per worker")
	require.Equal(t, map[string]any{"epoch": 1.0, "resumed": false}, pick(decode(t, started[0].Data), "epoch", "resumed"))
	require.Equal(t, map[string]any{"epoch": 2.0, "resumed": true}, pick(decode(t, started[1].Data), "epoch", "resumed"))
	require.Greater(t, started[1].Seq, before[len(before)-1].Seq, "the second worker starts after the kill")

	var keys []any
	for _, u := range ofType(evs, agent.EventUsage) {
		keys = append(keys, decode(t, u.Data)["call_key"])
	}
	require.Equal(t, []any{"lead:1", "lead:2"}, keys, "one usage event per model call")
	var steps []any
	for _, m := range ofType(evs, agent.EventMessageCompleted) {
		steps = append(steps, decode(t, m.Data)["step"])
	}
	require.Equal(t, []any{1.0, 2.0}, steps, "one message.completed per model call")
	// The interrupted call is announced again by the worker that runs it;
	// its result is stored once.
	require.Len(t, ofType(evs, agent.EventToolCalled), 2)
	results := ofType(evs, agent.EventToolResult)
	require.Len(t, results, 1)
	require.Equal(t, "ok", decode(t, results[0].Data)["result"])
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}
