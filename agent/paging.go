package agent

import (
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/tenants"
)

// Threads and runs list newest first; the cursor is the last id seen, in
// the same opaque form tenants' lists use.

func pageLimit(p tenants.Page) int32 { return p.Size() }

func pageBefore(p tenants.Page) (*uuid.UUID, error) { return p.Position() }

func pageNext(n int, lim int32, last uuid.UUID) string { return tenants.NextCursor(n, lim, last) }
