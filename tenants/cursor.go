package tenants

import (
	"encoding/base64"
	"fmt"

	"github.com/google/uuid"
)

// Lists page by id: ids are UUIDv7, so id order is creation order and a
// cursor is simply the last id seen, base64url-encoded to stay opaque.

const (
	defaultLimit = 50
	maxLimit     = 200
)

// Page asks for one page of a list.
type Page struct {
	Limit  int
	Cursor string
}

// Size is the page size to query: 50 by default, at most 200.
func (p Page) Size() int32 { return p.limit() }

// Position decodes the cursor into the last id of the previous page (nil on
// the first page); lists in either direction use it as their boundary.
func (p Page) Position() (*uuid.UUID, error) { return p.after() }

// NextCursor returns the cursor after the last of n items when the page was
// full, else "" (the last page).
func NextCursor(n int, size int32, last uuid.UUID) string { return nextCursor(n, size, last) }

func (p Page) limit() int32 {
	switch {
	case p.Limit <= 0:
		return defaultLimit
	case p.Limit > maxLimit:
		return maxLimit
	}
	return int32(p.Limit)
}

// after decodes the cursor; nil means from the start.
func (p Page) after() (*uuid.UUID, error) {
	if p.Cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrInvalidCursor)
	}
	id, err := uuid.FromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: wrong length", ErrInvalidCursor)
	}
	return &id, nil
}

// nextCursor returns the cursor after the last of n items when the page is full.
func nextCursor(n int, limit int32, last uuid.UUID) string {
	if n < int(limit) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(last[:])
}
