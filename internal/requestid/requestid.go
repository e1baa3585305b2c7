// Package requestid carries the id of the request being served through a
// context, so logs, audit events and problem details can name it. It has no
// product meaning and imports nothing of the project.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the request id on ctx, or "" outside a request.
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// New returns a fresh random request id (16 hex characters).
func New() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
