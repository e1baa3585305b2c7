// Package ui holds the console's templ components and the view models they
// render.
//
// It owns markup only: every component takes a view model made of plain,
// preformatted strings and flags, so templates never see domain rows,
// database types or secrets. The single exception is NewKey, the freshly
// created API key, which the API-keys page shows exactly once.
//
// Invariants:
//   - ui imports nothing from the domain (tenants, policy): handlers in
//     package web translate domain values into view models, so a template
//     cannot leak a field it was never given.
//   - Every form renders CSRFField, which reads the session's token from the
//     render context (WithCSRFToken); a form without it is refused by web.
//   - Every URL is built by the helpers in paths.go under Prefix, and points
//     at the console itself: no external URLs, no CDN assets.
//   - Elements tests rely on carry data-testid attributes; renaming one is
//     a test-visible change.
package ui
