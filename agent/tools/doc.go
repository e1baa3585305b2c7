// Package tools owns the tool registry seam: the sources that make tools
// Available (platform config, builtins, MCP servers, the subagent task
// tool — in that priority order), their deduplication by name, and the
// validation of a model's call arguments against a tool's schema.
//
// It decides nothing about who may use a tool: authorization and the
// execution-time guardrail belong to policy and the agent loop. Invariants:
// the first source to offer a name wins and every dropped duplicate is
// reported; a call whose arguments do not fit the schema never reaches Run.
package tools
