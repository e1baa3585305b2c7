// Package llmtest is the scripted stand-in for a model endpoint: an HTTP
// server speaking the OpenAI chat-completions wire protocol (streamed
// server-sent events with content and tool-call fragments, a final usage
// chunk and [DONE]; plain JSON when stream is false; GET /v1/models). Tests
// start one with [Start]; `agentplane fakellm` serves one standalone for
// demos; benchmarks drive thousands of concurrent requests through it.
//
// What it owns: choosing a reply for each request (the queue from
// [Server.Enqueue] first, then [Rule]s in the order added, then the
// [DemoRules] behaviour), encoding that reply exactly as an
// OpenAI-compatible server would, and recording requests for assertions.
//
// What it must never do: call a real model, hold state beyond the script
// and the recorded requests, or block a request on another one; replies
// can only slow themselves (Reply.Delay, Reply.ChunkDelay), and every wait
// ends when the client goes away or the server closes.
//
// Invariants: safe for concurrent use; each queued reply and each use of
// a rule with Times > 0 is consumed by exactly one request; content is
// streamed in about three chunks and each tool call's arguments in about
// three fragments, so clients must assemble them.
package llmtest
