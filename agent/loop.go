package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/usage"
)

// Why a run's context ended, told apart with context.Cause.
var (
	errCancelRequested = errors.New("cancel requested")
	errTimedOut        = errors.New("run timed out")
)

// outcome is how a run ends.
type outcome struct {
	status, stopReason, err string
}

// runState is one worker's hold on one run.
type runState struct {
	s         *Service
	row       agentdb.Run
	epoch     int64
	args      RunArgs
	agent     Agent
	model     ModelEndpoint
	endpoint  llm.Endpoint
	principal policy.Principal
	visible   []tools.Tool
	byName    map[string]tools.Tool
	history   []llm.Message
	tokens    int64
}

// drive runs the loop under a heartbeat and writes the terminal status.
func (r *runState) drive(parent context.Context) error {
	ctx, cancel := context.WithCancelCause(parent)
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		r.heartbeat(ctx, cancel)
	}()
	defer func() {
		cancel(nil)
		<-beating // no goroutine outlives the run
	}()

	var out outcome
	ag, err := r.s.AgentByName(ctx, r.row.TenantID, r.row.AgentName)
	if err != nil {
		out = outcome{status: StatusFailed, err: fmt.Sprintf("agent %q: %v", r.row.AgentName, err)}
	} else {
		r.agent = ag
		deadline := r.row.StartedAt.Add(time.Duration(ag.TimeoutSeconds) * time.Second)
		tctx, stop := context.WithDeadlineCause(ctx, deadline, errTimedOut)
		out = r.run(tctx)
		stop()
	}
	if errors.Is(context.Cause(ctx), ErrFenced) {
		r.s.logger.WarnContext(parent, "run lease lost; stopping", "run_id", r.row.ID)
		return nil
	}
	if parent.Err() != nil {
		// The worker is shutting down: leave the run to the reaper, which
		// hands it to another worker once the lease expires — and free the
		// sandbox now, so that worker does not wait out our sandbox lease.
		r.releaseSandbox(context.WithoutCancel(parent))
		return parent.Err()
	}
	return r.finish(context.WithoutCancel(parent), out)
}

// heartbeat extends the lease and watches for cancellation and fencing.
func (r *runState) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) {
	t := time.NewTicker(r.s.heartbeatEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cancelled, err := agentdb.New(r.s.pool).Heartbeat(ctx, agentdb.HeartbeatParams{
			TenantID: r.row.TenantID, ID: r.row.ID, Epoch: r.epoch, TtlSeconds: r.s.leaseTTLSeconds(),
		})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			cancel(ErrFenced)
			return
		case err != nil:
			r.s.logger.WarnContext(ctx, "heartbeat failed", "run_id", r.row.ID, "error", err)
		case cancelled:
			cancel(errCancelRequested)
			return
		}
	}
}

// run executes the loop and says how it ended; it never returns early
// without an outcome.
func (r *runState) run(ctx context.Context) outcome {
	if r.row.CancelRequested {
		return outcome{status: StatusCancelled, stopReason: StopCancelled}
	}
	if err := r.prepare(ctx); err != nil {
		return r.failure(ctx, err)
	}
	final, err := r.resume(ctx)
	if err != nil {
		return r.failure(ctx, err)
	}
	if final {
		return outcome{status: StatusSucceeded, stopReason: StopEndTurn}
	}
	for turn := int(r.row.Turns); turn < r.agent.MaxTurns; turn++ {
		if r.agent.TokenBudget != nil && r.tokens >= *r.agent.TokenBudget {
			return outcome{status: StatusFailed, stopReason: StopTokenBudget, err: "token budget exhausted before a final answer"}
		}
		resp, err := r.call(ctx, turn+1)
		if err != nil {
			return r.failure(ctx, err)
		}
		if len(resp.ToolCalls) == 0 {
			return outcome{status: StatusSucceeded, stopReason: StopEndTurn}
		}
		if err := r.runTools(ctx, turn+1, toolCalls(resp.ToolCalls)); err != nil {
			return r.failure(ctx, err)
		}
		if r.agent.TokenBudget != nil && r.tokens >= *r.agent.TokenBudget {
			return outcome{status: StatusFailed, stopReason: StopTokenBudget, err: "token budget exhausted before a final answer"}
		}
	}
	return outcome{status: StatusFailed, stopReason: StopMaxTurns, err: fmt.Sprintf("no final answer within %d turns", r.agent.MaxTurns)}
}

// failure classifies an error that ended the loop.
func (r *runState) failure(ctx context.Context, err error) outcome {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelRequested):
		return outcome{status: StatusCancelled, stopReason: StopCancelled}
	case errors.Is(cause, errTimedOut):
		return outcome{status: StatusTimedOut, err: "run exceeded its agent's timeout"}
	case errors.Is(cause, ErrFenced):
		return outcome{status: StatusFailed, err: ErrFenced.Error()}
	}
	if errors.Is(err, errCancelRequested) {
		// A step's fence saw the cancel before the heartbeat did.
		return outcome{status: StatusCancelled, stopReason: StopCancelled}
	}
	if errors.Is(err, llm.ErrContextLength) {
		return outcome{status: StatusFailed, stopReason: StopModelLength, err: err.Error()}
	}
	return outcome{status: StatusFailed, err: errorText(err)}
}

// errorText is a failed run's error. When the endpoint answered with
// something other than a structured error (garbage, an HTML error page),
// the body is the only clue, so an excerpt is kept.
func errorText(err error) string {
	msg := err.Error()
	if apiErr, ok := errors.AsType[*llm.APIError](err); ok && apiErr.Code == "" && apiErr.Body != "" {
		body := apiErr.Body
		if len(body) > 512 {
			body = body[:512] + "…"
		}
		msg += "; response body: " + storable(body)
	}
	return msg
}

// finish settles the run's delivery (receipt and run.settled, which may
// turn a success into a failure) and writes the terminal status and its
// event, in one fenced transaction. The outputs folder is read before it.
func (r *runState) finish(ctx context.Context, out outcome) error {
	produced, err := r.produced(ctx)
	if err != nil {
		return fmt.Errorf("settle run %s: %w", r.row.ID, err)
	}
	err = pg.WithTx(ctx, r.s.pool, func(ctx context.Context, tx pgx.Tx) error {
		out, err := r.settle(ctx, tx, out, produced)
		if err != nil {
			return err
		}
		row, err := agentdb.New(tx).FinishRun(ctx, agentdb.FinishRunParams{
			TenantID: r.row.TenantID, ID: r.row.ID, Epoch: r.epoch, Status: out.status,
			StopReason: nonEmpty(out.stopReason), Error: nonEmpty(out.err),
		})
		if err != nil {
			return fenced(err)
		}
		if _, err = r.s.appendEvent(ctx, tx, r.row.TenantID, r.row.ID, &r.epoch, EventRunCompleted, completedData(runFromRow(row))); err != nil {
			return err
		}
		return r.s.enqueueDeliveryTx(ctx, tx, row) // webhook, if any: same transaction
	})
	if errors.Is(err, ErrFenced) {
		return nil
	}
	if err == nil {
		r.s.stash.drop(r.row.ID)
		r.releaseSandbox(ctx)
	}
	return err
}

// fenced turns "no row" on a fenced write into ErrFenced.
func fenced(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrFenced
	}
	return err
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// inStep runs fn in a transaction that first proves the lease is ours.
func (r *runState) inStep(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return pg.WithTx(ctx, r.s.pool, func(ctx context.Context, tx pgx.Tx) error {
		row, err := agentdb.New(tx).FenceRun(ctx, agentdb.FenceRunParams{TenantID: r.row.TenantID, ID: r.row.ID, Epoch: r.epoch})
		if err != nil {
			return fenced(err)
		}
		if row.CancelRequested {
			return errCancelRequested
		}
		return fn(ctx, tx)
	})
}

// event appends a fenced event outside a step transaction.
func (r *runState) event(ctx context.Context, typ string, data any) error {
	_, err := r.s.appendEvent(ctx, r.s.pool, r.row.TenantID, r.row.ID, &r.epoch, typ, data)
	return err
}

func toolCalls(cs []llm.ToolCall) []ToolCall {
	out := make([]ToolCall, len(cs))
	for i, c := range cs {
		out[i] = ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return out
}

// recordCall persists a model response: the assistant message, its usage
// row and the run's counters, in one fenced step.
func (r *runState) recordCall(ctx context.Context, step int, resp llm.Response) error {
	calls, _ := json.Marshal(toolCalls(resp.ToolCalls))
	if len(resp.ToolCalls) == 0 {
		calls = nil
	}
	rec := usage.Record{
		TenantID: r.row.TenantID, RunID: r.row.ID, ThreadID: r.row.ThreadID, Agent: r.agent.Name, Caller: "lead",
		Principal: r.principal.String(), Endpoint: r.model.Name, Model: resp.Model, CallKey: fmt.Sprintf("lead:%d", step),
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CacheReadTokens: resp.Usage.CacheReadTokens, TotalTokens: resp.Usage.TotalTokens, Latency: resp.Latency,
	}
	return r.inStep(ctx, func(ctx context.Context, tx pgx.Tx) error {
		q := agentdb.New(tx)
		if _, err := q.InsertMessage(ctx, agentdb.InsertMessageParams{
			TenantID: r.row.TenantID, ThreadID: r.row.ThreadID, RunID: r.row.ID, Step: int32(step), Idx: 0,
			Role: "assistant", Content: resp.Content, ToolCalls: calls,
		}); err != nil {
			return fmt.Errorf("store assistant message: %w", err)
		}
		if _, err := usage.Insert(ctx, tx, rec); err != nil {
			return err
		}
		if err := q.AdvanceRun(ctx, agentdb.AdvanceRunParams{
			TenantID: r.row.TenantID, ID: r.row.ID, Epoch: r.epoch, Turns: int32(step),
			InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens, TotalTokens: rec.TotalTokens,
		}); err != nil {
			return fmt.Errorf("advance run: %w", err)
		}
		if _, err := r.s.appendEvent(ctx, tx, r.row.TenantID, r.row.ID, &r.epoch, EventUsage, map[string]any{
			"call_key": rec.CallKey, "caller": rec.Caller, "model": rec.Model, "input_tokens": rec.InputTokens,
			"output_tokens": rec.OutputTokens, "total_tokens": rec.TotalTokens, "latency_ms": resp.Latency.Milliseconds(),
		}); err != nil {
			return err
		}
		_, err := r.s.appendEvent(ctx, tx, r.row.TenantID, r.row.ID, &r.epoch, EventMessageCompleted, map[string]any{
			"step": step, "content": resp.Content, "tool_calls": toolCalls(resp.ToolCalls),
		})
		return err
	})
}
