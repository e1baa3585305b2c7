package agent_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/agenttest"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/usage"
)

// loopOpts varies the run environment of newRunEnv.
type loopOpts struct {
	// registry replaces the single static source built from tools.
	registry *tools.Registry
	tools    []tools.Tool
	// leaseTTL defaults to 2s (heartbeat every ~0.67s), as in newRunEnv.
	leaseTTL      time.Duration
	maxInputBytes int
}

// newLoopEnv is newRunEnv with options.
func newLoopEnv(t *testing.T, o loopOpts) *runEnv {
	t.Helper()
	opts := agenttest.Options{Tools: o.tools, LeaseTTL: o.leaseTTL, MaxInputBytes: o.maxInputBytes, Secrets: agenttest.NoSecrets{}}
	if reg := o.registry; reg != nil {
		opts.Registry = func(*agent.Service) *tools.Registry { return reg }
	}
	return wrapEnv(t, agenttest.New(t, pgtest.Pool(t), opts))
}

func (e *runEnv) pool() *pgxpool.Pool { return e.Pool }

// system acts in the env's tenant as the platform (for definitions and policy).
func (e *runEnv) system() tenants.Access { return e.System() }

// create creates a run on the env's thread without executing it.
func (e *runEnv) create(in agent.CreateRunInput) agent.Run {
	e.t.Helper()
	return e.Create(in)
}

func (e *runEnv) exec(id uuid.UUID) error { return e.Exec(id) }

func (e *runEnv) get(id uuid.UUID) agent.Run {
	e.t.Helper()
	return e.Get(id)
}

// startAgent creates a run of the named agent and executes it.
func (e *runEnv) startAgent(agentName, input string) agent.Run {
	e.t.Helper()
	r := e.create(agent.CreateRunInput{Agent: agentName, Input: input})
	require.NoError(e.t, e.exec(r.ID))
	return e.get(r.ID)
}

func (e *runEnv) messages() []agent.Message {
	e.t.Helper()
	page, err := e.svc.ListMessages(e.t.Context(), e.access, e.thread.ID, 0, 200)
	require.NoError(e.t, err)
	return page.Messages
}

func (e *runEnv) runMessages(run uuid.UUID) []agent.Message {
	e.t.Helper()
	var out []agent.Message
	for _, m := range e.messages() {
		if m.RunID == run {
			out = append(out, m)
		}
	}
	return out
}

func (e *runEnv) setRules(rules ...policy.CapabilityRule) {
	e.t.Helper()
	_, err := e.tenants.SetCapabilityRules(e.t.Context(), e.system(), rules)
	require.NoError(e.t, err)
}

func (e *runEnv) usage(run uuid.UUID) []usage.Record {
	e.t.Helper()
	recs, err := usage.ForRun(e.t.Context(), e.pool(), e.access.Tenant.ID, run)
	require.NoError(e.t, err)
	return recs
}

// executeAsync runs Execute on its own goroutine; the channel yields its error.
func (e *runEnv) executeAsync(id uuid.UUID) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.exec(id) }()
	return done
}

// waitEvent polls the run's events until one of type typ is stored.
func (e *runEnv) waitEvent(run uuid.UUID, typ string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		evs, err := e.svc.ListEvents(e.t.Context(), e.access, run, 0, 1000)
		return err == nil && len(ofType(evs, typ)) > 0
	}, 10*time.Second, 10*time.Millisecond, "no %s event", typ)
}

// awaitDone waits for an executeAsync result.
func awaitDone(t *testing.T, done <-chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		t.Fatalf("Execute did not return within %s", within)
		return nil
	}
}

func ofType(evs []agent.Event, typ string) []agent.Event {
	var out []agent.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// noArgs is the schema of a tool without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// fnTool is a tool without arguments in group "test".
func fnTool(name string, run func(ctx context.Context, c tools.Call) (string, error)) tools.Tool {
	return tools.Tool{Name: name, Description: "Test tool " + name + ".", Group: "test", Parameters: noArgs, Run: run}
}

func tc(id, name, args string) llm.ToolCall { return llm.ToolCall{ID: id, Name: name, Arguments: args} }

func toolReply(cs ...llm.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: cs} }

// closedPortURL is a base URL nothing listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/v1"
}

// toolMessages are the thread's tool-result messages of one run.
func toolMessages(ms []agent.Message) []agent.Message {
	var out []agent.Message
	for _, m := range ms {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// eventFor returns the data of the single event of typ whose call_id is id.
func eventFor(t *testing.T, evs []agent.Event, typ, id string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, ev := range ofType(evs, typ) {
		d := data(t, ev)
		if d["call_id"] == id {
			found = append(found, d)
		}
	}
	require.Len(t, found, 1, "%s events for call %s", typ, id)
	return found[0]
}
