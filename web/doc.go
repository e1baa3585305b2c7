// Package web is the server-rendered admin console: chi handlers, session
// and CSRF handling, view-model building and the embedded static files. The
// markup lives in web/ui.
//
// The composition root mounts the Console at ui.Prefix ("/console"); every
// link and form uses that prefix.
//
// web translates only. Every use case is a tenants.Service call; a page
// authorizes exactly like the API: resolve the principal's standing in the
// tenant (tenants.Service.Resolve, 404 when there is none), then ask the
// policy.Enforcer for the same permission the matching API operation
// declares (403 when refused). Templates receive view models, never domain
// rows, and never a secret except the one-time display of a new API key.
//
// Invariants:
//   - A console session is the agentplane_session cookie (HttpOnly,
//     SameSite=Lax, Path=/console); the server keeps only its hash.
//   - Every state-changing request (POST, PUT, PATCH, DELETE) carries the
//     session's CSRF token, compared in constant time; the login form,
//     which precedes any session, uses a double-submit cookie instead.
//   - Login attempts pass the LoginLimiter per client IP and per email
//     before a password is checked, and a limiter failure refuses the
//     login (fail closed).
//   - Pages and fragments are never cached; static files are, by version.
//   - No URL points outside the console: no CDN, no external fonts.
package web
