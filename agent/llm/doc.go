// Package llm is the model client the agent loop calls: one streaming chat
// completion against any OpenAI-compatible endpoint, with tool calls,
// token usage, bounded retries and classified errors. It speaks the wire
// protocol through github.com/sashabaranov/go-openai.
//
// What it owns: translating [Request] to the chat-completions wire format;
// reading the server-sent event stream, forwarding content deltas and
// assembling tool calls from their fragments by index; mapping failures to
// [*APIError], [ErrContextLength], [ErrUnreachable], [ErrTimeout] and
// [ErrInterrupted]; and the retry policy (exponential backoff with full
// jitter, Retry-After honoured, at most Config.MaxRetries retries).
//
// What it must never do: log or return the API key; persist anything;
// interpret tool-call arguments (they are passed through as the model sent
// them, and the loop validates them); decide what a "length" finish means
// (the loop does); retry after content deltas reached the caller.
//
// Invariants:
//   - Every call streams, asking for usage in the final chunk.
//   - onDelta sees each content delta exactly once, in order. A failure
//     after the first delivered delta is returned, never retried, so the
//     caller never has to un-see text. Failures before that (including
//     ones after tool-call fragments, which are not delivered) are retried
//     when retryable.
//   - A cancelled ctx ends the call promptly with ctx.Err(), whether it is
//     waiting for a response, reading a stream or sleeping before a retry.
//   - Response.Usage is the usage of the one attempt that succeeded.
//   - Malformed responses become errors, never panics.
package llm
