// Package docs serves the human-readable API reference at /docs.
//
// It owns the vendored Stoplight Elements standalone bundle (assets/, see
// README.md for package, version and license) and the small HTML page that
// loads it. Everything is embedded in the binary and served from /docs/assets,
// so the page works offline and never asks a CDN for anything. The OpenAPI
// document itself is not owned here: the caller passes its URL.
//
// Mount the handler on both the bare path and the subtree; it routes on the
// full request path, so no http.StripPrefix is needed:
//
//	h := docs.Handler("/openapi.json", "agentplane API")
//	mux.Handle("/docs", h)
//	mux.Handle("/docs/", h)
//
// GET /docs (or /docs/) returns the page; GET /docs/assets/<file> returns an
// embedded asset; every other path under /docs is 404.
package docs
