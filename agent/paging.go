package agent

import (
	"encoding/base64"
	"fmt"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/tenants"
)

// Threads and runs list newest first; the cursor is the last id seen.

func pageLimit(p tenants.Page) int32 {
	switch {
	case p.Limit <= 0:
		return 50
	case p.Limit > 200:
		return 200
	}
	return int32(p.Limit)
}

func pageBefore(p tenants.Page) (*uuid.UUID, error) {
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

func pageNext(n int, lim int32, last uuid.UUID) string {
	if n < int(lim) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(last[:])
}
