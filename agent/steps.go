package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/policy"
)

// maxToolOutput bounds what one tool result puts into the conversation.
const maxToolOutput = 64 << 10

// prepare loads what the loop needs and passes the run-level gates: the
// principal must still be authorized and the model must be allowed.
func (r *runState) prepare(ctx context.Context) error {
	s := r.s
	ag := r.agent // loaded by drive, which needed its timeout
	var err error
	if r.model, err = s.ModelFor(ctx, r.row.TenantID, ag); err != nil {
		return fmt.Errorf("model endpoint for agent %q: %w", ag.Name, err)
	}
	r.endpoint = llm.Endpoint{BaseURL: r.model.BaseURL, Model: r.model.Model}
	if r.model.APIKeySecret != nil {
		if r.endpoint.APIKey, err = s.secrets.Reveal(ctx, r.row.TenantID, *r.model.APIKeySecret); err != nil {
			return fmt.Errorf("api key secret %q of model %q: %w", *r.model.APIKeySecret, r.model.Name, err)
		}
	}
	if len(r.args.SecretNames) > 0 {
		if _, ok := s.stash.get(r.row.ID); !ok {
			return fmt.Errorf("the run's request-scoped secrets are not available to this worker (they are held only by the process that created the run)")
		}
	}
	r.principal = principalOf(r.row)
	role, caps, err := r.authorityNow(ctx)
	if err != nil {
		return err
	}
	if ok, err := caps.Allowed(role, policy.Capability{Kind: "model", Name: r.model.Name}); err != nil || !ok {
		_ = r.event(ctx, EventError, map[string]any{"gate": "authorized", "capability": "model:" + r.model.Name, "reason": "denied by capability policy"})
		return fmt.Errorf("model %q is not allowed for role %s by the tenant's capability policy", r.model.Name, role)
	}
	// Before any tool runs: settlement compares the outputs with this.
	if err := r.snapshotOutputs(ctx); err != nil {
		return err
	}
	if err := r.event(ctx, EventRunStarted, map[string]any{
		"epoch": r.epoch, "resumed": r.epoch > 1, "agent": ag.Name, "model": r.model.Name,
	}); err != nil {
		return err
	}
	if err := r.storeInput(ctx); err != nil {
		return err
	}
	if err := r.assemble(ctx, role, caps); err != nil {
		return err
	}
	r.tokens = r.row.TotalTokens
	return r.loadHistory(ctx)
}

// authorityNow resolves the principal's live role and the tenant's current
// capability policy. Failing either fails closed.
func (r *runState) authorityNow(ctx context.Context) (policy.Role, *policy.CapabilitySet, error) {
	role, err := r.s.rt.Principals.LiveRole(ctx, r.row.TenantID, r.principal)
	if err != nil {
		return "", nil, fmt.Errorf("principal %s is no longer authorized: %w", r.principal, err)
	}
	caps, err := r.s.rt.Capabilities.Load(ctx, r.row.TenantID)
	if err != nil {
		return "", nil, fmt.Errorf("capability policy unavailable: %w", err)
	}
	return role, caps, nil
}

func (r *runState) storeInput(ctx context.Context) error {
	return r.inStep(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := agentdb.New(tx).InsertMessage(ctx, agentdb.InsertMessageParams{
			TenantID: r.row.TenantID, ThreadID: r.row.ThreadID, RunID: r.row.ID, Step: 0, Idx: 0,
			Role: "user", Content: r.row.Input,
		})
		if err != nil {
			return fmt.Errorf("store input message: %w", err)
		}
		return nil
	})
}

// assemble runs the Available → Authorized → Visible gates (DESIGN §4).
func (r *runState) assemble(ctx context.Context, role policy.Role, caps *policy.CapabilitySet) error {
	avail, dropped, err := r.s.rt.Tools.Available(ctx, tools.Scope{TenantID: r.row.TenantID, Agent: r.agent.Name, Principal: r.principal})
	if err != nil {
		return err
	}
	for _, d := range dropped {
		r.s.logger.WarnContext(ctx, "duplicate tool dropped", "run_id", r.row.ID, "tool", d.Name, "source", d.Source, "kept_from", d.KeptFrom)
		if err := r.event(ctx, EventToolDenied, map[string]any{
			"name": d.Name, "gate": "available", "reason": "duplicate; kept the one from " + d.KeptFrom, "source": d.Source,
		}); err != nil {
			return err
		}
	}
	r.byName = map[string]tools.Tool{}
	for _, t := range avail {
		if !r.agentAllowsGroup(t.Group) {
			if err := r.event(ctx, EventToolDenied, map[string]any{"name": t.Name, "gate": "authorized", "reason": fmt.Sprintf("tool group %q is not enabled for agent %q", t.Group, r.agent.Name)}); err != nil {
				return err
			}
			continue
		}
		ok, err := caps.Allowed(role, policy.Capability{Kind: "tool", Name: t.Name, Group: t.Group})
		if err != nil {
			// Fail closed: a policy that cannot be evaluated allows nothing.
			r.visible, r.byName = nil, map[string]tools.Tool{}
			return r.event(ctx, EventToolDenied, map[string]any{"gate": "authorized", "reason": "policy evaluation failed: " + err.Error()})
		}
		if !ok {
			if err := r.event(ctx, EventToolDenied, map[string]any{"name": t.Name, "gate": "authorized", "reason": "denied by capability policy for role " + string(role)}); err != nil {
				return err
			}
			continue
		}
		r.byName[t.Name] = t
		if !t.Deferred {
			r.visible = append(r.visible, t)
		}
	}
	return nil
}

// agentAllowsGroup applies the agent's tool groups: an empty list allows
// every group, otherwise only the listed ones.
func (r *runState) agentAllowsGroup(group string) bool {
	if len(r.agent.ToolGroups) == 0 {
		return true
	}
	for _, g := range r.agent.ToolGroups {
		if g == group {
			return true
		}
	}
	return false
}

// loadHistory rebuilds the conversation from the durable log.
func (r *runState) loadHistory(ctx context.Context) error {
	rows, err := agentdb.New(r.s.pool).AllThreadMessages(ctx, agentdb.AllThreadMessagesParams{TenantID: r.row.TenantID, ThreadID: r.row.ThreadID})
	if err != nil {
		return fmt.Errorf("load thread messages: %w", err)
	}
	r.history = r.history[:0]
	if r.agent.Instructions != "" {
		r.history = append(r.history, llm.Message{Role: "system", Content: r.agent.Instructions})
	}
	// An earlier run that ended while its tools ran (cancelled, timed out)
	// left calls without results; endpoints reject such a conversation, so
	// each gets an error result. This run's own pending calls are resumed.
	var open []llm.ToolCall
	closeOpen := func() {
		for _, c := range open {
			r.history = append(r.history, llm.Message{Role: "tool", Content: "error: the run ended before this tool call returned", ToolCallID: c.ID, Name: c.Name})
		}
		open = nil
	}
	for _, row := range rows {
		m := messageFromRow(row)
		if m.Role != "tool" {
			closeOpen()
		}
		lm := llm.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.ToolName}
		for _, c := range m.ToolCalls {
			lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		r.history = append(r.history, lm)
		switch {
		case m.Role == "assistant" && row.RunID != r.row.ID:
			open = slices.Clone(lm.ToolCalls)
		case m.Role == "tool":
			open = slices.DeleteFunc(open, func(c llm.ToolCall) bool { return c.ID == m.ToolCallID })
		}
	}
	closeOpen()
	return nil
}

// resume finishes a step a previous worker left half done: tool calls of the
// last persisted response whose results were not stored yet. It reports
// whether the last response was already the final answer.
func (r *runState) resume(ctx context.Context) (bool, error) {
	step := int(r.row.Turns)
	if step == 0 {
		return false, nil
	}
	rows, err := agentdb.New(r.s.pool).AllThreadMessages(ctx, agentdb.AllThreadMessagesParams{TenantID: r.row.TenantID, ThreadID: r.row.ThreadID})
	if err != nil {
		return false, fmt.Errorf("load run messages: %w", err)
	}
	var calls []ToolCall
	done := map[int]bool{}
	for _, row := range rows {
		if row.RunID != r.row.ID || int(row.Step) != step {
			continue
		}
		if row.Idx == 0 {
			calls = messageFromRow(row).ToolCalls
		} else {
			done[int(row.Idx)] = true
		}
	}
	if len(calls) == 0 {
		return true, nil
	}
	var pending []indexedCall
	for i, c := range calls {
		if !done[i+1] {
			pending = append(pending, indexedCall{idx: i + 1, ToolCall: c})
		}
	}
	if len(pending) == 0 {
		return false, nil
	}
	return false, r.runIndexed(ctx, step, pending)
}

// call makes one model call (a turn) and persists its response.
func (r *runState) call(ctx context.Context, step int) (llm.Response, error) {
	if err := r.fitsContext(); err != nil {
		return llm.Response{}, err
	}
	req := llm.Request{Messages: r.history}
	if r.model.SupportsTools {
		for _, t := range r.visible {
			req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
	}
	deltas := &deltaBatcher{flush: func(text string) error {
		return r.event(ctx, EventMessageDelta, map[string]any{"step": step, "text": storable(text)})
	}}
	onDelta := deltas.add
	onRetry := func(ri llm.RetryInfo) {
		_ = r.event(ctx, EventError, map[string]any{
			"retrying": true, "attempt": ri.Attempt, "wait_ms": ri.Wait.Milliseconds(), "error": ri.Err.Error(),
		})
	}
	resp, err := r.s.rt.Models.Complete(ctx, r.endpoint, req, onDelta, onRetry)
	if ferr := deltas.done(); err == nil {
		err = ferr
	}
	if err != nil {
		return llm.Response{}, err
	}
	resp = storableResponse(resp)
	if err := r.recordCall(ctx, step, resp); err != nil {
		return llm.Response{}, err
	}
	r.tokens += resp.Usage.TotalTokens
	r.history = append(r.history, llm.Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls})
	return resp, nil
}

// fitsContext refuses a request that cannot fit the model's window, by a
// conservative estimate of four characters a token.
func (r *runState) fitsContext() error {
	chars := 0
	for _, m := range r.history {
		chars += len(m.Content)
		for _, c := range m.ToolCalls {
			chars += len(c.Arguments) + len(c.Name)
		}
	}
	for _, t := range r.visible {
		chars += len(t.Parameters) + len(t.Description)
	}
	if est := chars / 4; est > r.model.ContextWindow {
		return fmt.Errorf("%w: the conversation is about %d tokens, over the model's context window of %d", llm.ErrContextLength, est, r.model.ContextWindow)
	}
	return nil
}

type indexedCall struct {
	idx int
	ToolCall
}

// runTools executes one response's tool calls.
func (r *runState) runTools(ctx context.Context, step int, calls []ToolCall) error {
	ic := make([]indexedCall, len(calls))
	for i, c := range calls {
		ic[i] = indexedCall{idx: i + 1, ToolCall: c}
	}
	return r.runIndexed(ctx, step, ic)
}

type toolResult struct {
	content string
	isError bool
	gate    string // set when a gate refused the call
}

// runIndexed runs the calls concurrently (they are independent within one
// response), then stores every result in one fenced step.
func (r *runState) runIndexed(ctx context.Context, step int, calls []indexedCall) error {
	for _, c := range calls {
		if err := r.event(ctx, EventToolCalled, map[string]any{"step": step, "call_id": c.ID, "name": c.Name, "arguments": c.Arguments}); err != nil {
			return err
		}
	}
	results := make([]toolResult, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A panicking tool must not take the worker process down.
				if p := recover(); p != nil {
					r.s.logger.ErrorContext(ctx, "tool panicked", "run_id", r.row.ID, "tool", c.Name, "panic", fmt.Sprint(p))
					results[i] = toolResult{content: storable(fmt.Sprintf("error: tool %s panicked: %v", c.Name, p)), isError: true}
				}
			}()
			results[i] = r.execute(ctx, c.ToolCall)
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	err := r.inStep(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for i, c := range calls {
			if err := r.storeResult(ctx, tx, step, c, results[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, c := range calls {
		r.history = append(r.history, llm.Message{Role: "tool", Content: results[i].content, ToolCallID: c.ID, Name: c.Name})
	}
	return nil
}

func (r *runState) storeResult(ctx context.Context, tx pgx.Tx, step int, c indexedCall, res toolResult) error {
	name := c.Name
	_, err := agentdb.New(tx).InsertMessage(ctx, agentdb.InsertMessageParams{
		TenantID: r.row.TenantID, ThreadID: r.row.ThreadID, RunID: r.row.ID, Step: int32(step), Idx: int32(c.idx),
		Role: "tool", Content: res.content, ToolCallID: &c.ID, ToolName: &name,
	})
	if err != nil {
		return fmt.Errorf("store tool result: %w", err)
	}
	if res.gate != "" {
		_, err = r.s.appendEvent(ctx, tx, r.row.TenantID, r.row.ID, &r.epoch, EventToolDenied, map[string]any{
			"step": step, "call_id": c.ID, "name": c.Name, "gate": res.gate, "reason": res.content,
		})
		return err
	}
	_, err = r.s.appendEvent(ctx, tx, r.row.TenantID, r.row.ID, &r.epoch, EventToolResult, map[string]any{
		"step": step, "call_id": c.ID, "name": c.Name, "result": res.content, "is_error": res.isError,
	})
	return err
}

// execute passes the execution-time gates and runs one call. Every refusal
// is an error result the model sees.
func (r *runState) execute(ctx context.Context, c ToolCall) toolResult {
	t, ok := r.byName[c.Name]
	if !ok {
		return toolResult{content: fmt.Sprintf("tool %q is not available to this run", c.Name), isError: true, gate: "visible"}
	}
	if t.Deferred {
		// Nothing promotes deferred tools yet (tool_search), so none may run.
		return toolResult{content: fmt.Sprintf("tool %q is deferred and has not been promoted by tool_search", c.Name), isError: true, gate: "executed"}
	}
	args, err := tools.CheckArguments(t, c.Arguments)
	if err != nil {
		return toolResult{content: "error: " + err.Error(), isError: true}
	}
	role, caps, err := r.authorityNow(ctx)
	if err != nil {
		return toolResult{content: "denied: " + err.Error(), isError: true, gate: "executed"}
	}
	allowed, err := caps.Allowed(role, policy.Capability{Kind: "tool", Name: t.Name, Group: t.Group})
	if err != nil || !allowed {
		return toolResult{content: fmt.Sprintf("denied: the tenant's capability policy does not allow %s for role %s", t.Name, role), isError: true, gate: "executed"}
	}
	out, err := t.Run(ctx, tools.Call{
		TenantID: r.row.TenantID, ThreadID: r.row.ThreadID, RunID: r.row.ID,
		Principal: r.principal, CallID: c.ID, Arguments: args,
	})
	if err != nil {
		return toolResult{content: "error: " + storable(err.Error()), isError: true}
	}
	out = storable(out)
	if len(out) > maxToolOutput {
		cut := maxToolOutput
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut-- // never store half a character
		}
		out = out[:cut] + fmt.Sprintf("\n[output truncated: %d bytes over the %d-byte limit]", len(out)-maxToolOutput, maxToolOutput)
	}
	return toolResult{content: out}
}

// storable makes tool text fit a PostgreSQL text column: invalid UTF-8 and
// NUL bytes (binary output) become U+FFFD instead of failing the step.
// storableResponse cleans what a model sent before it is stored as text and
// jsonb (PostgreSQL refuses NUL and invalid UTF-8 in both).
func storableResponse(resp llm.Response) llm.Response {
	resp.Content = storable(resp.Content)
	calls := make([]llm.ToolCall, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		calls[i] = llm.ToolCall{ID: storable(c.ID), Name: storable(c.Name), Arguments: storable(c.Arguments)}
	}
	resp.ToolCalls = calls
	resp.Model = storable(resp.Model)
	return resp
}

func storable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
