// Package agenttest is test support only: it builds the fixture that the
// agent, builtin and console tests share — a tenants.Service, an
// agent.Service with an insert-only River client and a Runtime (model
// client with short backoffs, a tool registry, capabilities, principals),
// a scripted llmtest model and, unless told otherwise, one tenant with a
// developer API-key principal, that model as its default endpoint and a
// thread. Runs are executed by calling Execute directly, as a worker would;
// no River worker competes for the jobs.
//
// What it owns: wiring those pieces the same way for every test package,
// with [Options] for the few ways fixtures legitimately differ (tools,
// lease TTL, input bound, sandbox releaser, thread tree, broker, secrets).
//
// What it must never do: be imported by non-test code, hold state beyond
// one test, or change product behaviour; it only calls the agent and
// tenants services' public API. It imports agent, so only external test
// packages (package agent_test, builtin_test, web_test…) can use it.
//
// Invariants: every helper takes the test from [New] and fails it with
// require on error; everything it starts stops in the test's cleanup.
package agenttest
