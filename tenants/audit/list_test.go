package audit_test

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit"
)

func TestListPaginatesNewestFirst(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	record(t, tx, tenantID, 23)

	var seqs []int64
	cursor, pages := "", 0
	for {
		page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{Limit: 5, Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Events), 5)
		for _, e := range page.Events {
			seqs = append(seqs, e.Seq)
		}
		pages++
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	require.Equal(t, 5, pages)
	want := make([]int64, 23)
	for i := range want {
		want[i] = int64(23 - i)
	}
	require.Equal(t, want, seqs, "every event once, newest first")

	// An exactly full last page has no next cursor.
	page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{Limit: 23})
	require.NoError(t, err)
	require.Len(t, page.Events, 23)
	require.Empty(t, page.NextCursor)
}

func TestListEntryFields(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	record(t, tx, tenantID, 1)

	page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	e := page.Events[0]
	require.Equal(t, tenantID, e.TenantID)
	require.Equal(t, int64(1), e.Seq)
	require.NotEqual(t, uuid.Nil, e.ID)
	require.Equal(t, policy.KindUser, e.ActorKind)
	require.Equal(t, alice.ID, e.ActorID)
	require.Equal(t, "thing.update", e.Action)
	require.Equal(t, "thing", e.TargetKind)
	require.Equal(t, "thing-1", e.TargetID)
	require.JSONEq(t, `{"n": 1, "name": "name 1"}`, string(e.Diff))
	require.Len(t, e.Hash, 64)
	require.WithinDuration(t, time.Now(), e.CreatedAt, time.Minute)
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	bob := policy.Principal{Kind: policy.KindAPIKey, ID: "key-bob"}
	events := []audit.Event{
		{Actor: alice, Action: "member.create", TargetKind: "member", TargetID: "m1"},
		{Actor: alice, Action: "member.delete", TargetKind: "member", TargetID: "m1"},
		{Actor: bob, Action: "member.create", TargetKind: "member", TargetID: "m2"},
		{Actor: bob, Action: "secret.put", TargetKind: "secret", TargetID: "OPENAI"},
		{Actor: alice, Action: "members.export", TargetKind: "tenant", TargetID: "t"},
	}
	for _, e := range events {
		e.TenantID = tenantID
		require.NoError(t, audit.Record(t.Context(), tx, e))
		time.Sleep(time.Millisecond) // distinct created_at for the time filters
	}
	var cut time.Time
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT created_at FROM audit_events WHERE tenant_id = $1 AND seq = 4`, tenantID).Scan(&cut))

	tests := []struct {
		name string
		f    audit.Filter
		want []int64
	}{
		{"none", audit.Filter{}, []int64{5, 4, 3, 2, 1}},
		{"action", audit.Filter{Action: "member.create"}, []int64{3, 1}},
		{"action prefix", audit.Filter{ActionPrefix: "member."}, []int64{3, 2, 1}},
		{"prefix is literal, not a pattern", audit.Filter{ActionPrefix: "member_"}, nil},
		{"actor", audit.Filter{ActorID: "key-bob"}, []int64{4, 3}},
		{"target kind", audit.Filter{TargetKind: "secret"}, []int64{4}},
		{"target", audit.Filter{TargetKind: "member", TargetID: "m1"}, []int64{2, 1}},
		{"combined", audit.Filter{ActionPrefix: "member.", ActorID: alice.ID}, []int64{2, 1}},
		{"since", audit.Filter{Since: cut}, []int64{5, 4}},
		{"until", audit.Filter{Until: cut.Add(time.Microsecond)}, []int64{4, 3, 2, 1}},
		{"since after until", audit.Filter{Since: cut, Until: cut}, nil},
		{"no match", audit.Filter{Action: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Subtests share the parent's transaction, so they run in order.
			page, err := audit.List(t.Context(), tx, tenantID, tt.f)
			require.NoError(t, err)
			var got []int64
			for _, e := range page.Events {
				got = append(got, e.Seq)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestListIsolatesTenants(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	a, b := newTenant(t, tx), newTenant(t, tx)
	record(t, tx, a, 3)
	record(t, tx, b, 4)

	for tenantID, n := range map[uuid.UUID]int{a: 3, b: 4} {
		var all []audit.Entry
		cursor := ""
		for {
			page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{Limit: 2, Cursor: cursor})
			require.NoError(t, err)
			all = append(all, page.Events...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		require.Len(t, all, n)
		for _, e := range all {
			require.Equal(t, tenantID, e.TenantID)
		}
	}

	// A cursor from tenant B's listing only pages within tenant A.
	pageB, err := audit.List(t.Context(), tx, b, audit.Filter{Limit: 1})
	require.NoError(t, err)
	pageA, err := audit.List(t.Context(), tx, a, audit.Filter{Cursor: pageB.NextCursor})
	require.NoError(t, err)
	require.Len(t, pageA.Events, 3)

	var n int
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT count(*) FROM audit_events WHERE tenant_id = $1`, a).Scan(&n))
	require.Equal(t, 3, n)
}

func TestListLimits(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	record(t, tx, tenantID, audit.MaxLimit+1)

	for limit, want := range map[int]int{0: audit.DefaultLimit, -3: audit.DefaultLimit, 1000: audit.MaxLimit, 7: 7} {
		page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{Limit: limit})
		require.NoError(t, err)
		require.Len(t, page.Events, want, "limit %d", limit)
		require.NotEmpty(t, page.NextCursor)
	}
}

func TestListRejectsInvalidCursor(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{
		"not base64!",
		enc("42"),
		enc("v1:abc"),
		enc("v1:0"),
		enc("v1:-5"),
		enc("v1:+5"),
		enc("v1:05"),
		enc(fmt.Sprintf("v1:%d0", int64(1)<<62)),
		base64.StdEncoding.EncodeToString([]byte("v1:5")),
	} {
		_, err := audit.List(t.Context(), tx, tenantID, audit.Filter{Cursor: c})
		require.ErrorIs(t, err, audit.ErrInvalidCursor, "cursor %q", c)
	}
}
