package agent_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
)

func TestLoopIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	in := agent.CreateRunInput{Input: "once only", IdempotencyKey: "key-1", Metadata: map[string]any{"ticket": "T-1"}}
	r1, created, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, in)
	require.NoError(t, err)
	require.True(t, created)
	r2, created, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, in)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, r1.ID, r2.ID)

	var jobs int
	require.NoError(t, e.pool().QueryRow(t.Context(),
		`SELECT count(*) FROM river_job WHERE kind = 'agent.run' AND args->>'run_id' = $1`, r1.ID.String()).Scan(&jobs))
	require.Equal(t, 1, jobs, "one job however often the request is retried")
	require.Len(t, ofType(e.events(r1.ID), agent.EventRunQueued), 1)

	_, err = e.svc.CreateAgent(t.Context(), e.system(), agent.AgentInput{Name: "other"})
	require.NoError(t, err)
	for name, other := range map[string]agent.CreateRunInput{
		"input":    {Input: "something else", IdempotencyKey: "key-1", Metadata: in.Metadata},
		"metadata": {Input: in.Input, IdempotencyKey: "key-1", Metadata: map[string]any{"ticket": "T-2"}},
		"agent":    {Input: in.Input, IdempotencyKey: "key-1", Metadata: in.Metadata, Agent: "other"},
	} {
		_, _, err = e.svc.CreateRun(t.Context(), e.access, e.thread.ID, other)
		var ce *agent.ConflictError
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, "idempotency_key_reused", ce.Code, name)
	}

	// The same body on another thread is another request.
	th2, err := e.svc.CreateThread(t.Context(), e.access, "second")
	require.NoError(t, err)
	_, _, err = e.svc.CreateRun(t.Context(), e.access, th2.ID, in)
	require.ErrorIs(t, err, agent.ErrConflict)

	// A finished run is still found by its key.
	require.NoError(t, e.exec(r1.ID))
	r3, created, err := e.svc.CreateRun(t.Context(), e.access, e.thread.ID, in)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, agent.StatusSucceeded, r3.Status)
}

func TestLoopCreateRunRejectsBadInput(t *testing.T) {
	t.Parallel()
	e := newLoopEnv(t, loopOpts{maxInputBytes: 1024})
	ctx := t.Context()
	for _, input := range []string{"", "   ", " \n\t "} {
		_, _, err := e.svc.CreateRun(ctx, e.access, e.thread.ID, agent.CreateRunInput{Input: input})
		var ie *agent.InvalidError
		require.ErrorAs(t, err, &ie, "%q", input)
		require.Equal(t, "input", ie.Field)
	}

	_, _, err := e.svc.CreateRun(ctx, e.access, e.thread.ID, agent.CreateRunInput{Input: strings.Repeat("a", 1025)})
	var tl *agent.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, 1024, tl.Limit)
	_, created, err := e.svc.CreateRun(ctx, e.access, e.thread.ID, agent.CreateRunInput{Input: strings.Repeat("a", 1024)})
	require.NoError(t, err, "exactly the limit is fine")
	require.True(t, created)

	_, _, err = e.svc.CreateRun(ctx, e.access, e.thread.ID, agent.CreateRunInput{Input: "hi", Agent: "ghost"})
	var nf *agent.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "agent", nf.Kind)

	_, _, err = e.svc.CreateRun(ctx, e.access, uuid.Must(uuid.NewV7()), agent.CreateRunInput{Input: "hi"})
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "thread", nf.Kind)

	// Another tenant's thread is not found either.
	other := newRunEnv(t)
	_, _, err = e.svc.CreateRun(ctx, e.access, other.thread.ID, agent.CreateRunInput{Input: "hi"})
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "thread", nf.Kind)

	var n int
	require.NoError(t, e.pool().QueryRow(ctx, `SELECT count(*) FROM runs WHERE tenant_id = $1`, e.access.Tenant.ID).Scan(&n))
	require.Equal(t, 1, n, "only the valid request made a run")
}

func TestLoopOneRunAtATimePerThread(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	r1 := e.create(agent.CreateRunInput{Input: "first question"})
	r2 := e.create(agent.CreateRunInput{Input: "second question"})

	err := e.exec(r2.ID)
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze, "the later run waits for the earlier one")
	require.Positive(t, snooze.Duration)
	second := e.get(r2.ID)
	require.Equal(t, agent.StatusQueued, second.Status)
	require.Nil(t, second.StartedAt)
	require.Equal(t, []string{agent.EventRunQueued}, types(e.events(r2.ID)))
	require.Empty(t, e.model.Requests())

	require.NoError(t, e.exec(r1.ID))
	require.Equal(t, agent.StatusSucceeded, e.get(r1.ID).Status)
	require.NoError(t, e.exec(r2.ID))
	require.Equal(t, agent.StatusSucceeded, e.get(r2.ID).Status)

	ms := e.messages()
	require.Len(t, ms, 4)
	require.Equal(t, []string{"user", "assistant", "user", "assistant"}, roles(ms))
	require.Equal(t, []uuid.UUID{r1.ID, r1.ID, r2.ID, r2.ID}, []uuid.UUID{ms[0].RunID, ms[1].RunID, ms[2].RunID, ms[3].RunID})
	require.Equal(t, "first question", ms[0].Content)
	require.Equal(t, "Hello! You said: first question", ms[1].Content)
	require.Equal(t, "second question", ms[2].Content)
	require.Equal(t, "Hello! You said: second question", ms[3].Content)
	for i := 1; i < len(ms); i++ {
		require.Greater(t, ms[i].Seq, ms[i-1].Seq)
	}

	// The second run saw the whole conversation so far.
	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	var got []string
	for _, m := range reqs[1].Messages {
		got = append(got, m.Role+": "+m.Content)
	}
	require.Equal(t, []string{
		"user: first question", "assistant: Hello! You said: first question", "user: second question",
	}, got)

	// Executing a finished run again does nothing.
	require.NoError(t, e.exec(r1.ID))
	require.Len(t, e.model.Requests(), 2)
}
