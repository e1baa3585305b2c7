package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/agenttest"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// runEnv is one tenant with a scripted model, an agent service whose runs
// are executed by calling Execute directly (no River worker competes for
// the jobs), and an in-process tool registry; the short names alias the
// agenttest environment's fields for the tests.
type runEnv struct {
	*agenttest.Env
	t       *testing.T
	svc     *agent.Service
	tenants *tenants.Service
	caps    *policy.Capabilities
	model   *llmtest.Server
	access  tenants.Access
	thread  agent.Thread
	queue   *river.Client[pgx.Tx]
}

func newRunEnv(t *testing.T, ts ...tools.Tool) *runEnv {
	t.Helper()
	return newLoopEnv(t, loopOpts{tools: ts})
}

func wrapEnv(t *testing.T, e *agenttest.Env) *runEnv {
	return &runEnv{Env: e, t: t, svc: e.Service, tenants: e.Tenants, caps: e.Caps, model: e.Model, access: e.Access, thread: e.Thread, queue: e.Queue}
}

// start creates a run and executes it to the end, as a worker would.
func (e *runEnv) start(input string) agent.Run {
	e.t.Helper()
	return e.Start(agent.CreateRunInput{Input: input})
}

func (e *runEnv) events(run uuid.UUID) []agent.Event {
	e.t.Helper()
	return e.Events(run)
}

func types(evs []agent.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func data(t *testing.T, e agent.Event) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data, &m))
	return m
}

// echoTool returns its "text" argument.
func echoTool() tools.Tool { return agenttest.EchoTool() }
