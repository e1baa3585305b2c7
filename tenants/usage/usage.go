// Package usage owns the usage ledger: one row per model call, attributed
// to tenant, run, thread, agent, caller (the lead agent or a subagent),
// principal and the model that actually answered. Recording is idempotent
// per call key, so a retried or resumed step never counts twice. Quotas and
// reports will read the same ledger.
package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants/usage/internal/usagedb"
)

// Record is one model call's usage.
type Record struct {
	TenantID, RunID, ThreadID uuid.UUID
	Agent                     string
	// Caller is "lead" or a subagent's name.
	Caller    string
	Principal string
	// Endpoint is the model endpoint's name; Model what the response reported.
	Endpoint string
	Model    string
	// CallKey identifies the call within the run (e.g. "lead:3").
	CallKey                                                 string
	InputTokens, OutputTokens, CacheReadTokens, TotalTokens int64
	Latency                                                 time.Duration
	CreatedAt                                               time.Time
}

// Insert records r in db (normally the transaction that persists the
// call's result); it reports false when the call was already recorded.
func Insert(ctx context.Context, db pg.DBTX, r Record) (bool, error) {
	n, err := usagedb.New(db).InsertUsage(ctx, usagedb.InsertUsageParams{
		TenantID: r.TenantID, ID: uuid.Must(uuid.NewV7()), RunID: r.RunID, ThreadID: r.ThreadID,
		AgentName: r.Agent, Caller: r.Caller, Principal: r.Principal, ModelEndpoint: r.Endpoint, Model: r.Model,
		CallKey: r.CallKey, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, TotalTokens: r.TotalTokens, LatencyMs: int32(r.Latency.Milliseconds()),
	})
	if err != nil {
		return false, fmt.Errorf("record usage %s: %w", r.CallKey, err)
	}
	return n == 1, nil
}

// ForRun lists a run's usage rows in call order.
func ForRun(ctx context.Context, db pg.DBTX, tenantID, runID uuid.UUID) ([]Record, error) {
	rows, err := usagedb.New(db).RunUsage(ctx, usagedb.RunUsageParams{TenantID: tenantID, RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("usage of run %s: %w", runID, err)
	}
	out := make([]Record, len(rows))
	for i, r := range rows {
		out[i] = Record{
			TenantID: r.TenantID, RunID: r.RunID, ThreadID: r.ThreadID, Agent: r.AgentName, Caller: r.Caller,
			Principal: r.Principal, Endpoint: r.ModelEndpoint, Model: r.Model, CallKey: r.CallKey,
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheReadTokens: r.CacheReadTokens,
			TotalTokens: r.TotalTokens, Latency: time.Duration(r.LatencyMs) * time.Millisecond, CreatedAt: r.CreatedAt,
		}
	}
	return out, nil
}

// Totals sums usage.
type Totals struct {
	InputTokens, OutputTokens, CacheReadTokens, TotalTokens, Calls int64
}

// ThreadTotals sums a thread's usage across its runs.
func ThreadTotals(ctx context.Context, db pg.DBTX, tenantID, threadID uuid.UUID) (Totals, error) {
	r, err := usagedb.New(db).ThreadTotals(ctx, usagedb.ThreadTotalsParams{TenantID: tenantID, ThreadID: threadID})
	if err != nil {
		return Totals{}, fmt.Errorf("usage of thread %s: %w", threadID, err)
	}
	return Totals{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheReadTokens: r.CacheReadTokens, TotalTokens: r.TotalTokens, Calls: r.Calls}, nil
}
