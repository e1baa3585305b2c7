package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
)

func TestLoopFencedWorkerStopsWriting(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.Reply{Content: "from the old worker", Delay: 3 * time.Second})
	r := e.create(agent.CreateRunInput{Input: "hi"})
	done := e.executeAsync(r.ID)
	e.waitEvent(r.ID, agent.EventRunStarted)

	// Another worker takes the run over: its claim bumps the epoch.
	tag, err := e.pool().Exec(t.Context(),
		`UPDATE runs SET lease_epoch = lease_epoch + 1, lease_owner = 'other-worker' WHERE tenant_id = $1 AND id = $2`,
		e.access.Tenant.ID, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	before := e.events(r.ID)

	start := time.Now()
	require.NoError(t, awaitDone(t, done, 10*time.Second), "a fenced-out worker returns nil")
	require.Less(t, time.Since(start), 2900*time.Millisecond, "the heartbeat noticed the lost lease")

	final := e.get(r.ID)
	require.Equal(t, agent.StatusRunning, final.Status, "the new owner's run is left alone")
	require.Empty(t, final.Error)
	require.Equal(t, 0, final.Turns)
	for _, m := range e.runMessages(r.ID) {
		require.NotEqual(t, "assistant", m.Role)
	}
	require.Empty(t, e.usage(r.ID))
	require.Equal(t, before, e.events(r.ID), "no event after the takeover")
	var owner string
	var epoch int64
	require.NoError(t, e.pool().QueryRow(t.Context(), `SELECT lease_owner, lease_epoch FROM runs WHERE tenant_id = $1 AND id = $2`,
		e.access.Tenant.ID, r.ID).Scan(&owner, &epoch))
	require.Equal(t, "other-worker", owner)
	require.EqualValues(t, 2, epoch)
}

// A fenced worker that is between steps (not waiting on the model) also
// stops without a trace: its next step's fence fails.
func TestLoopFencedDuringTool(t *testing.T) {
	t.Parallel()
	var e *runEnv
	takeover := fnTool("takeover", func(ctx context.Context, c tools.Call) (string, error) {
		_, err := e.pool().Exec(ctx, `UPDATE runs SET lease_epoch = lease_epoch + 1 WHERE tenant_id = $1 AND id = $2`, c.TenantID, c.RunID)
		return "done", err
	})
	e = newLoopEnv(t, loopOpts{tools: []tools.Tool{takeover}, leaseTTL: time.Minute})
	e.model.Enqueue(toolReply(tc("c1", "takeover", "{}")), llmtest.Reply{Content: "never asked"})
	runID := e.create(agent.CreateRunInput{Input: "go"}).ID
	require.NoError(t, e.exec(runID))

	final := e.get(runID)
	require.Equal(t, agent.StatusRunning, final.Status)
	require.Empty(t, toolMessages(e.runMessages(runID)), "the tool result is not stored by the old worker")
	require.Len(t, e.model.Requests(), 1)
	evs := e.events(runID)
	require.Empty(t, ofType(evs, agent.EventToolResult))
	require.Empty(t, ofType(evs, agent.EventRunCompleted))
}

// A run whose worker lost its lease mid-step is resumed by the next worker
// from the last persisted step: nothing is written twice.
func TestLoopResumeAfterTakeover(t *testing.T) {
	t.Parallel()
	var e *runEnv
	var calls atomic.Int32
	takeover := fnTool("takeover", func(ctx context.Context, c tools.Call) (string, error) {
		if calls.Add(1) == 1 {
			// The first worker is fenced out and its lease has expired.
			_, err := e.pool().Exec(ctx, `UPDATE runs SET lease_epoch = lease_epoch + 1, lease_expires_at = now() - interval '1 second'
				WHERE tenant_id = $1 AND id = $2`, c.TenantID, c.RunID)
			return "first try", err
		}
		return "second try", nil
	})
	e = newLoopEnv(t, loopOpts{tools: []tools.Tool{takeover}, leaseTTL: time.Minute})
	e.model.Enqueue(toolReply(tc("c1", "takeover", "{}")), llmtest.Reply{Content: "all done"})
	r := e.create(agent.CreateRunInput{Input: "go"})
	require.NoError(t, e.exec(r.ID))
	require.Equal(t, agent.StatusRunning, e.get(r.ID).Status)

	require.NoError(t, e.exec(r.ID), "the next worker takes the expired lease")
	final := e.get(r.ID)
	require.Equal(t, agent.StatusSucceeded, final.Status, final.Error)
	require.Equal(t, 2, final.Turns)
	require.EqualValues(t, 2, calls.Load())

	ms := e.runMessages(r.ID)
	require.Equal(t, []string{"user", "assistant", "tool", "assistant"}, roles(ms))
	require.Equal(t, "second try", ms[2].Content)
	require.Equal(t, "all done", ms[3].Content)
	require.Len(t, e.model.Requests(), 2, "the persisted model call is not repeated")
	requireToolPairs(t, e.model.Requests()[1])
	recs := e.usage(r.ID)
	require.Len(t, recs, 2)
	require.Equal(t, "lead:1", recs[0].CallKey)
	require.Equal(t, "lead:2", recs[1].CallKey)

	evs := e.events(r.ID)
	for i, ev := range evs {
		require.EqualValues(t, i+1, ev.Seq)
	}
	started := ofType(evs, agent.EventRunStarted)
	require.Len(t, started, 2)
	require.Equal(t, false, data(t, started[0])["resumed"])
	require.Equal(t, true, data(t, started[1])["resumed"])
	require.Len(t, ofType(evs, agent.EventRunCompleted), 1)
}

func TestLoopReapReenqueuesExpiredRun(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	r := e.create(agent.CreateRunInput{Input: "hi"})
	_, err := e.pool().Exec(t.Context(), `UPDATE runs SET status = 'running', lease_epoch = 1, lease_owner = 'dead',
		started_at = now(), lease_expires_at = now() - interval '1 second' WHERE tenant_id = $1 AND id = $2`, e.access.Tenant.ID, r.ID)
	require.NoError(t, err)
	n, err := e.svc.Reap(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 1)
	var jobs int
	require.NoError(t, e.pool().QueryRow(t.Context(),
		`SELECT count(*) FROM river_job WHERE kind = 'agent.run' AND args->>'run_id' = $1`, r.ID.String()).Scan(&jobs))
	require.Equal(t, 2, jobs, "the original job and the re-enqueued one")

	require.NoError(t, e.exec(r.ID))
	final := e.get(r.ID)
	require.Equal(t, agent.StatusSucceeded, final.Status, final.Error)
	require.Len(t, ofType(e.events(r.ID), agent.EventRunCompleted), 1)
}

func TestLoopTimeout(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	_, err := e.svc.UpdateAgent(t.Context(), e.system(), agent.DefaultAgentName, agent.AgentPatch{TimeoutSeconds: ptr(1)})
	require.NoError(t, err)
	e.model.Enqueue(llmtest.Reply{Content: "too slow", Delay: 5 * time.Second})
	start := time.Now()
	r := e.start("hi")
	require.Less(t, time.Since(start), 4*time.Second)
	require.Equal(t, agent.StatusTimedOut, r.Status)
	require.Contains(t, r.Error, "timeout")
	require.Empty(t, e.usage(r.ID))
}

func TestLoopExecuteUnknownRun(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	err := e.svc.Execute(t.Context(), agent.RunArgs{TenantID: e.access.Tenant.ID, RunID: uuid.Must(uuid.NewV7())})
	require.NoError(t, err, "a job for a run that does not exist has nothing to do")
	require.False(t, errors.Is(err, agent.ErrNotFound))
}
