package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
)

func TestLoopCancelQueued(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	r := e.create(agent.CreateRunInput{Input: "never mind"})

	got, err := e.svc.CancelRun(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCancelled, got.Status)
	require.Equal(t, agent.StopCancelled, got.StopReason)
	require.NotNil(t, got.FinishedAt)
	require.True(t, got.Terminal())

	require.NoError(t, e.exec(r.ID), "a cancelled run is nothing to do")
	after := e.get(r.ID)
	require.Equal(t, got, after)
	require.Nil(t, after.StartedAt, "a cancelled queued run never starts")
	require.Empty(t, e.model.Requests())
	require.Equal(t, []string{agent.EventRunQueued, agent.EventRunCompleted}, types(e.events(r.ID)))
	require.Empty(t, e.messages())

	again, err := e.svc.CancelRun(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, got, again, "cancel is idempotent")
	require.Len(t, ofType(e.events(r.ID), agent.EventRunCompleted), 1)
}

func TestLoopCancelUnknownRun(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	_, err := e.svc.CancelRun(t.Context(), e.access, uuid.Must(uuid.NewV7()))
	var nf *agent.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "run", nf.Kind)
}

func TestLoopCancelRunning(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	e.model.Enqueue(llmtest.Reply{Content: "too late", Delay: 2 * time.Second})
	r := e.create(agent.CreateRunInput{Input: "think hard"})
	done := e.executeAsync(r.ID)
	e.waitEvent(r.ID, agent.EventRunStarted)
	require.Eventually(t, func() bool { return len(e.model.Requests()) == 1 }, 5*time.Second, 5*time.Millisecond)

	start := time.Now()
	got, err := e.svc.CancelRun(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, agent.StatusRunning, got.Status, "a running run stops at its next step boundary")

	require.NoError(t, awaitDone(t, done, 10*time.Second))
	require.Less(t, time.Since(start), 1900*time.Millisecond, "the heartbeat noticed the cancel before the model answered")
	final := e.get(r.ID)
	require.Equal(t, agent.StatusCancelled, final.Status, final.Error)
	require.Equal(t, agent.StopCancelled, final.StopReason)
	require.Empty(t, final.Error)
	require.NotNil(t, final.FinishedAt)
	for _, m := range e.runMessages(r.ID) {
		require.NotEqual(t, "assistant", m.Role, "no answer is stored after the cancel")
	}
	require.Empty(t, e.usage(r.ID))
	evs := e.events(r.ID)
	require.Equal(t, map[string]any{"status": agent.StatusCancelled, "stop_reason": agent.StopCancelled}, data(t, evs[len(evs)-1]))

	again, err := e.svc.CancelRun(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	require.Equal(t, final, again, "cancel is idempotent on a finished run")
}

// A cancel noticed by a step's fence (before the heartbeat sees it) ends
// the run cancelled too, not failed.
func TestLoopCancelAtStepBoundary(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	slow := fnTool("slow", func(ctx context.Context, _ tools.Call) (string, error) {
		close(entered)
		select {
		case <-release:
			return "finished", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// A long lease: the heartbeat does not tick during the test.
	e := newLoopEnv(t, loopOpts{tools: []tools.Tool{slow}, leaseTTL: time.Minute})
	e.model.Enqueue(toolReply(tc("c1", "slow", "{}")), llmtest.Reply{Content: "never asked"})
	r := e.create(agent.CreateRunInput{Input: "go slow"})
	done := e.executeAsync(r.ID)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("tool never ran")
	}
	_, err := e.svc.CancelRun(t.Context(), e.access, r.ID)
	require.NoError(t, err)
	close(release)
	require.NoError(t, awaitDone(t, done, 10*time.Second))

	final := e.get(r.ID)
	require.Equal(t, agent.StatusCancelled, final.Status, final.Error)
	require.Equal(t, agent.StopCancelled, final.StopReason)
	require.Empty(t, final.Error)
	require.Len(t, e.model.Requests(), 1, "no model call after the cancel")
}

func TestLoopCancelledEarlierRunUnblocksThread(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	r1 := e.create(agent.CreateRunInput{Input: "first"})
	r2 := e.create(agent.CreateRunInput{Input: "second"})
	_, err := e.svc.CancelRun(t.Context(), e.access, r1.ID)
	require.NoError(t, err)
	require.NoError(t, e.exec(r2.ID))
	require.Equal(t, agent.StatusSucceeded, e.get(r2.ID).Status)
	require.Equal(t, []string{"user", "assistant"}, roles(e.messages()))
}

// requireToolPairs checks the rule OpenAI-compatible endpoints enforce: an
// assistant message with tool calls is followed by one tool message per
// call, before any other message.
func requireToolPairs(t *testing.T, req llmtest.ChatRequest) {
	t.Helper()
	ms := req.Messages
	for i := 0; i < len(ms); i++ {
		if ms[i].Role != "assistant" || len(ms[i].ToolCalls) == 0 {
			require.NotEqual(t, "tool", ms[i].Role, "message %d: a tool message without its call", i)
			continue
		}
		want := map[string]bool{}
		for _, c := range ms[i].ToolCalls {
			want[c.ID] = true
		}
		for i+1 < len(ms) && ms[i+1].Role == "tool" {
			i++
			require.True(t, want[ms[i].ToolCallID], "message %d answers unknown or repeated call %q", i, ms[i].ToolCallID)
			delete(want, ms[i].ToolCallID)
		}
		require.Empty(t, want, "tool calls without a result before message %d", i+1)
	}
}

// A run that ends while its tools run (cancelled, timed out) must not leave
// the thread unusable: the next run's conversation still pairs every tool
// call with a result.
func TestLoopNextRunAfterCancelDuringTools(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	var once sync.Once
	stuck := fnTool("stuck", func(ctx context.Context, _ tools.Call) (string, error) {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return "", ctx.Err()
	})
	e := newLoopEnv(t, loopOpts{tools: []tools.Tool{stuck, echoTool()}})
	e.model.Enqueue(toolReply(tc("c1", "stuck", "{}"), tc("c2", "echo", `{"text":"x"}`)))
	r1 := e.create(agent.CreateRunInput{Input: "get stuck"})
	done := e.executeAsync(r1.ID)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("tool never ran")
	}
	_, err := e.svc.CancelRun(t.Context(), e.access, r1.ID)
	require.NoError(t, err)
	require.NoError(t, awaitDone(t, done, 10*time.Second))
	require.Equal(t, agent.StatusCancelled, e.get(r1.ID).Status)

	e.model.Enqueue(llmtest.Reply{Content: "fresh start"})
	r2 := e.startAgent(agent.DefaultAgentName, "try again")
	require.Equal(t, agent.StatusSucceeded, r2.Status, r2.Error)
	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	requireToolPairs(t, reqs[1])
	require.Equal(t, "try again", reqs[1].Last().Content)
}
