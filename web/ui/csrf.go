package ui

import (
	"context"
	"encoding/json"
)

// The CSRF token travels in the render context, like templ's CSP nonce: it
// is a property of the session rendering the page, not of any one view
// model, and threading it through every model would only invite forgetting
// it in one.

type csrfKey struct{}

// WithCSRFToken attaches the session's CSRF token for CSRFField.
func WithCSRFToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, csrfKey{}, token)
}

// csrfToken returns the token set by WithCSRFToken, or "".
func csrfToken(ctx context.Context) string {
	t, _ := ctx.Value(csrfKey{}).(string)
	return t
}

// CSRFFieldName is the form field (and CSRFHeader the htmx header) that
// carries the token back.
const (
	CSRFFieldName = "csrf_token"
	CSRFHeader    = "X-CSRF-Token"
)

// csrfHeaders is the hx-headers value that makes every htmx request from
// the page carry the token.
func csrfHeaders(token string) string {
	b, _ := json.Marshal(map[string]string{CSRFHeader: token})
	return string(b)
}
