package audit

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit/internal/auditdb"
)

// Page sizes for List.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Filter selects and pages audit entries. Empty fields match everything.
type Filter struct {
	// Limit is the page size: DefaultLimit when not positive, at most MaxLimit.
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
	// Action matches exactly, e.g. "member.create".
	Action string
	// ActionPrefix matches actions starting with it, e.g. "member.".
	ActionPrefix string
	ActorID      string
	TargetKind   string
	TargetID     string
	// Since and Until bound created_at to [Since, Until); zero means open.
	Since time.Time
	Until time.Time
}

// Page is one page of entries, newest first. NextCursor is empty on the
// last page.
type Page struct {
	Events     []Entry
	NextCursor string
}

// Entry is a stored audit event as readers see it.
type Entry struct {
	ID         uuid.UUID
	TenantID   uuid.UUID
	Seq        int64
	ActorKind  policy.Kind
	ActorID    string
	Action     string
	TargetKind string
	TargetID   string
	RequestID  string
	Diff       json.RawMessage
	CreatedAt  time.Time
	// Hash is the event's chain hash in lowercase hex.
	Hash string
}

// List returns one page of tenantID's audit entries matching f, newest first.
func List(ctx context.Context, db pg.DBTX, tenantID uuid.UUID, f Filter) (Page, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	params := auditdb.ListEventsParams{
		TenantID:     tenantID,
		Action:       optional(f.Action),
		ActionPrefix: optional(f.ActionPrefix),
		ActorID:      optional(f.ActorID),
		TargetKind:   optional(f.TargetKind),
		TargetID:     optional(f.TargetID),
		Since:        optionalTime(f.Since),
		Until:        optionalTime(f.Until),
		// One extra row tells whether another page exists.
		MaxRows: int32(limit + 1),
	}
	if f.Cursor != "" {
		seq, err := decodeCursor(f.Cursor)
		if err != nil {
			return Page{}, err
		}
		params.BeforeSeq = &seq
	}
	rows, err := auditdb.New(db).ListEvents(ctx, params)
	if err != nil {
		return Page{}, fmt.Errorf("list audit events of tenant %s: %w", tenantID, err)
	}
	var page Page
	if len(rows) > limit {
		rows = rows[:limit]
		page.NextCursor = encodeCursor(rows[limit-1].Seq)
	}
	page.Events = make([]Entry, len(rows))
	for i, r := range rows {
		page.Events[i] = entryFromRow(tenantID, r)
	}
	return page, nil
}

func entryFromRow(tenantID uuid.UUID, r auditdb.ListEventsRow) Entry {
	return Entry{
		ID:         r.ID,
		TenantID:   tenantID,
		Seq:        r.Seq,
		ActorKind:  policy.Kind(r.ActorKind),
		ActorID:    r.ActorID,
		Action:     r.Action,
		TargetKind: r.TargetKind,
		TargetID:   r.TargetID,
		RequestID:  r.RequestID,
		Diff:       r.Diff,
		CreatedAt:  r.CreatedAt,
		Hash:       hex.EncodeToString(r.Hash),
	}
}

// cursorPrefix versions the cursor so its format can change without old
// cursors being misread.
const cursorPrefix = "v1:"

// encodeCursor makes the opaque cursor for "entries older than seq". It does
// not name the tenant: it is only ever applied within the tenant the caller
// is authorized for, and a seq leaks nothing there.
func encodeCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(seq, 10)))
}

func decodeCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, fmt.Errorf("%w: not base64url", ErrInvalidCursor)
	}
	s, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, fmt.Errorf("%w: unknown version", ErrInvalidCursor)
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil || seq < 1 || encodeCursor(seq) != c {
		return 0, fmt.Errorf("%w: bad position", ErrInvalidCursor)
	}
	return seq, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
