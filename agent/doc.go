// Package agent is the harness runtime: model endpoints and agent
// definitions, threads, runs and their River worker, the loop that calls a
// model and executes tool calls through the capability gates, run events
// and their fan-out, signed webhook delivery of run results, and the
// durable message log. Subpackages own the model
// client (agent/llm), its scripted test double (agent/llmtest) and the tool
// registry (agent/tools).
//
// Invariants: every query takes the tenant id; every write a run's worker
// makes is fenced by the run's lease epoch, so a worker that lost its lease
// cannot write; each step is persisted before the next begins; a tool call
// that fails a gate is a recorded denial, never a silent allow.
package agent
