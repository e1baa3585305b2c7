package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/policy"
)

func TestLoopDuplicateToolFirstSourceWins(t *testing.T) {
	t.Parallel()
	first := echoTool()
	first.Description = "Echo from the platform config."
	second := fnTool("echo", func(context.Context, tools.Call) (string, error) { return "from the second source", nil })
	second.Description = "Echo from a lower-priority source."
	other := fnTool("other", func(context.Context, tools.Call) (string, error) { return "other", nil })
	reg := tools.NewRegistry(
		tools.Static{SourceName: "config", List: []tools.Tool{first}},
		tools.Static{SourceName: "mcp", List: []tools.Tool{second, other}},
	)
	e := newLoopEnv(t, loopOpts{registry: reg})
	e.model.Enqueue(toolReply(tc("c1", "echo", `{"text":"hi"}`)), llmtest.Reply{Content: "done"})
	r := e.start("echo hi")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)

	req := e.model.Requests()[0]
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
		if tl.Name == "echo" {
			require.Equal(t, first.Description, tl.Description)
		}
	}
	require.Equal(t, []string{"echo", "other"}, names, "one echo, priority order kept")

	evs := e.events(r.ID)
	var dups []map[string]any
	for _, ev := range ofType(evs, agent.EventToolDenied) {
		dups = append(dups, data(t, ev))
	}
	require.Len(t, dups, 1)
	require.Equal(t, "available", dups[0]["gate"])
	require.Equal(t, "echo", dups[0]["name"])
	require.Equal(t, "mcp", dups[0]["source"])
	require.Contains(t, dups[0]["reason"], "config")
	require.Equal(t, "echo: hi", eventFor(t, evs, agent.EventToolResult, "c1")["result"], "the first source's tool ran")
}

func TestLoopCapabilityPolicyFiltersTools(t *testing.T) {
	t.Parallel()
	other := fnTool("other", func(context.Context, tools.Call) (string, error) { return "other", nil })
	other.Group = "misc"
	for _, tt := range []struct {
		name       string
		rules      []policy.CapabilityRule
		echoHidden bool
	}{
		{"deny tool for developer", []policy.CapabilityRule{{Effect: "deny", Role: "developer", Target: "tool:echo"}}, true},
		{"deny group for developer", []policy.CapabilityRule{{Effect: "deny", Role: "developer", Target: "group:test"}}, true},
		{"deny tool for every role", []policy.CapabilityRule{{Effect: "deny", Role: "*", Target: "tool:ec*"}}, true},
		{"deny for viewer only", []policy.CapabilityRule{{Effect: "deny", Role: "viewer", Target: "tool:echo"}}, false},
		{"deny another group", []policy.CapabilityRule{{Effect: "deny", Role: "developer", Target: "group:sandbox"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, echoTool(), other)
			e.setRules(tt.rules...)
			e.model.Enqueue(toolReply(tc("c1", "echo", `{"text":"x"}`)), llmtest.Reply{Content: "done"})
			r := e.start("echo x")
			require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)

			reqs := e.model.Requests()
			require.True(t, reqs[0].HasTool("other"), "other tools stay visible")
			require.Equal(t, !tt.echoHidden, reqs[0].HasTool("echo"))
			evs := e.events(r.ID)
			if !tt.echoHidden {
				require.Empty(t, ofType(evs, agent.EventToolDenied))
				require.Equal(t, "echo: x", eventFor(t, evs, agent.EventToolResult, "c1")["result"])
				return
			}
			denied := ofType(evs, agent.EventToolDenied)
			require.Len(t, denied, 2, "one at assembly, one for the call")
			d := data(t, denied[0])
			require.Equal(t, "authorized", d["gate"])
			require.Equal(t, "echo", d["name"])
			require.Contains(t, d["reason"], "developer")
			// A call to a tool the model was not shown is refused at Visible.
			call := eventFor(t, evs, agent.EventToolDenied, "c1")
			require.Equal(t, "visible", call["gate"])
			require.Empty(t, callResults(t, evs, agent.EventToolResult, "c1"))
		})
	}
}

// lockdown is a tool that changes the tenant's policy while the run goes on.
func lockdown(e **runEnv, rules ...policy.CapabilityRule) tools.Tool {
	tl := fnTool("lockdown", func(ctx context.Context, _ tools.Call) (string, error) {
		(*e).setRules(rules...)
		return "locked down", nil
	})
	tl.Group = "admin"
	return tl
}

func TestLoopExecutionRecheckSeesPolicyChange(t *testing.T) {
	t.Parallel()
	var e *runEnv
	e = newRunEnv(t, lockdown(&e, policy.CapabilityRule{Effect: "deny", Role: "developer", Target: "tool:echo"}), echoTool())
	e.model.Enqueue(
		toolReply(tc("c1", "lockdown", "{}")),
		toolReply(tc("c2", "echo", `{"text":"after"}`)),
		llmtest.Reply{Content: "denied, as expected"},
	)
	r := e.start("lock down then echo")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	require.Equal(t, 3, r.Turns)

	reqs := e.model.Requests()
	require.Len(t, reqs, 3)
	require.True(t, reqs[1].HasTool("echo"), "the visible set is fixed at assembly")
	evs := e.events(r.ID)
	require.Equal(t, "locked down", eventFor(t, evs, agent.EventToolResult, "c1")["result"])
	denied := eventFor(t, evs, agent.EventToolDenied, "c2")
	require.Equal(t, "executed", denied["gate"])
	require.Equal(t, "echo", denied["name"])
	require.Empty(t, callResults(t, evs, agent.EventToolResult, "c2"))
	last := reqs[2].Last()
	require.Equal(t, "c2", last.ToolCallID)
	require.Contains(t, last.Content, "denied")
}

func TestLoopExecutionRecheckGroupDeny(t *testing.T) {
	t.Parallel()
	var e *runEnv
	e = newRunEnv(t, lockdown(&e, policy.CapabilityRule{Effect: "deny", Role: "developer", Target: "group:test"}), echoTool())
	e.model.Enqueue(
		toolReply(tc("c1", "lockdown", "{}")),
		toolReply(tc("c2", "echo", `{"text":"after"}`), tc("c3", "lockdown", "{}")),
		llmtest.Reply{Content: "ok"},
	)
	r := e.start("go")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	evs := e.events(r.ID)
	require.Equal(t, "executed", eventFor(t, evs, agent.EventToolDenied, "c2")["gate"])
	require.Equal(t, "locked down", eventFor(t, evs, agent.EventToolResult, "c3")["result"], "group admin is still allowed")
}

func TestLoopExecutionRecheckRevokedKey(t *testing.T) {
	t.Parallel()
	var e *runEnv
	revoke := fnTool("revoke", func(ctx context.Context, _ tools.Call) (string, error) {
		id, err := uuid.Parse(e.access.Principal.ID)
		if err != nil {
			return "", err
		}
		if _, err := e.tenants.RevokeAPIKey(ctx, e.system(), id); err != nil {
			return "", err
		}
		return "revoked", nil
	})
	e = newRunEnv(t, revoke, echoTool())
	e.model.Enqueue(
		toolReply(tc("c1", "revoke", "{}")),
		toolReply(tc("c2", "echo", `{"text":"after"}`)),
		llmtest.Reply{Content: "ok"},
	)
	r := e.start("revoke then echo")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	evs := e.events(r.ID)
	require.Equal(t, "revoked", eventFor(t, evs, agent.EventToolResult, "c1")["result"])
	denied := eventFor(t, evs, agent.EventToolDenied, "c2")
	require.Equal(t, "executed", denied["gate"])
	require.Contains(t, denied["reason"], "no longer authorized")
	require.Contains(t, e.model.Requests()[2].Last().Content, "denied")
}

func TestLoopRevokedKeyBeforeStartFails(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	r := e.create(agent.CreateRunInput{Input: "hi"})
	id, err := uuid.Parse(e.access.Principal.ID)
	require.NoError(t, err)
	_, err = e.tenants.RevokeAPIKey(t.Context(), e.system(), id)
	require.NoError(t, err)
	require.NoError(t, e.exec(r.ID))
	got := e.get(r.ID)
	require.Equal(t, agent.StatusFailed, got.Status)
	require.Contains(t, got.Error, "no longer authorized")
	require.Empty(t, e.model.Requests())
}

func TestLoopModelDeniedByPolicy(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	e.setRules(policy.CapabilityRule{Effect: "deny", Role: "developer", Target: "model:scripted"})
	r := e.start("hi")
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Contains(t, r.Error, `model "scripted"`)
	require.Empty(t, e.model.Requests(), "a denied model is never called")
	evs := e.events(r.ID)
	errs := ofType(evs, agent.EventError)
	require.Len(t, errs, 1)
	require.Equal(t, "authorized", data(t, errs[0])["gate"])
	require.Equal(t, "model:scripted", data(t, errs[0])["capability"])
	require.Empty(t, e.runMessages(r.ID), "nothing of the run is stored")
	done := data(t, evs[len(evs)-1])
	require.Equal(t, agent.StatusFailed, done["status"])

	// A deny for another role leaves the developer alone.
	e.setRules(policy.CapabilityRule{Effect: "deny", Role: "viewer", Target: "model:*"})
	r = e.start("hi again")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
}

func TestLoopToolEventsJSON(t *testing.T) {
	t.Parallel()
	// tool.called carries the model's raw argument text even when it is
	// not JSON; the event stays valid JSON.
	e := newRunEnv(t, echoTool())
	e.model.Enqueue(toolReply(tc("c1", "echo", `{"text": "oops`)), llmtest.Reply{Content: "ok"})
	r := e.start("go")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	for _, ev := range e.events(r.ID) {
		require.True(t, json.Valid(ev.Data), ev.Type)
	}
	require.Equal(t, `{"text": "oops`, eventFor(t, e.events(r.ID), agent.EventToolCalled, "c1")["arguments"])
}

// corruptPolicy stores a rule the capability model cannot load.
func corruptPolicy(ctx context.Context, e *runEnv) error {
	_, err := e.pool().Exec(ctx, `INSERT INTO casbin_rules (tenant_id, ptype, v0, v1) VALUES ($1, 'g', 'alice', 'developer')`, e.access.Tenant.ID)
	return err
}

func TestLoopUnloadablePolicyFailsClosed(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, echoTool())
	require.NoError(t, corruptPolicy(t.Context(), e))
	r := e.start("hi")
	require.Equal(t, agent.StatusFailed, r.Status)
	require.Contains(t, r.Error, "capability policy")
	require.Empty(t, e.model.Requests())
}

func TestLoopUnloadablePolicyAtExecutionFailsClosed(t *testing.T) {
	t.Parallel()
	var e *runEnv
	breaker := fnTool("breaker", func(ctx context.Context, _ tools.Call) (string, error) {
		return "broken", corruptPolicy(ctx, e)
	})
	e = newRunEnv(t, breaker, echoTool())
	e.model.Enqueue(toolReply(tc("c1", "breaker", "{}")), toolReply(tc("c2", "echo", `{"text":"x"}`)), llmtest.Reply{Content: "ok"})
	r := e.start("break it")
	require.Equal(t, agent.StatusSucceeded, r.Status, r.Error)
	denied := eventFor(t, e.events(r.ID), agent.EventToolDenied, "c2")
	require.Equal(t, "executed", denied["gate"])
	require.Contains(t, denied["reason"], "capability policy unavailable")
}

func TestLoopRunsAreTenantScoped(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	other := newRunEnv(t)
	r := e.create(agent.CreateRunInput{Input: "mine"})
	var nf *agent.NotFoundError
	_, err := other.svc.GetRun(t.Context(), other.access, r.ID)
	require.ErrorAs(t, err, &nf)
	_, err = other.svc.ListEvents(t.Context(), other.access, r.ID, 0, 100)
	require.ErrorAs(t, err, &nf)
	_, err = other.svc.CancelRun(t.Context(), other.access, r.ID)
	require.ErrorAs(t, err, &nf)
	_, err = other.svc.ListMessages(t.Context(), other.access, e.thread.ID, 0, 100)
	require.ErrorAs(t, err, &nf)
	// A job naming the wrong tenant does nothing.
	require.NoError(t, e.svc.Execute(t.Context(), agent.RunArgs{TenantID: other.access.Tenant.ID, RunID: r.ID}))
	require.Equal(t, agent.StatusQueued, e.get(r.ID).Status)
}
