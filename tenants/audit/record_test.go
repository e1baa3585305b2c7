package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/internal/requestid"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit"
)

type chainRow struct {
	Seq       int64
	ID        uuid.UUID
	RequestID string
	CreatedAt time.Time
	PrevHash  []byte
	Hash      []byte
}

func chain(t *testing.T, db pg.DBTX, tenantID uuid.UUID) []chainRow {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT seq, id, request_id, created_at, prev_hash, hash
		FROM audit_events WHERE tenant_id = $1 ORDER BY seq`, tenantID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[chainRow])
	require.NoError(t, err)
	return out
}

func TestRecordChainsEvents(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	ctx := requestid.With(t.Context(), "req-123")

	before := time.Now().Add(-time.Second)
	for range 4 {
		require.NoError(t, audit.Record(ctx, tx, audit.Event{TenantID: tenantID, Actor: policy.System, Action: "tenant.update"}))
	}

	rows := chain(t, tx, tenantID)
	require.Len(t, rows, 4)
	prev := make([]byte, sha256.Size)
	for i, r := range rows {
		require.Equal(t, int64(i+1), r.Seq)
		require.Equal(t, prev, r.PrevHash, "seq %d links to its predecessor", r.Seq)
		require.Len(t, r.Hash, sha256.Size)
		require.Equal(t, uuid.Version(7), r.ID.Version())
		require.Equal(t, "req-123", r.RequestID)
		require.WithinRange(t, r.CreatedAt, before, time.Now().Add(time.Second))
		prev = r.Hash
	}

	var headSeq int64
	var headHash []byte
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT seq, hash FROM audit_heads WHERE tenant_id = $1`, tenantID).Scan(&headSeq, &headHash))
	require.Equal(t, int64(4), headSeq)
	require.Equal(t, prev, headHash)

	rep := verifyTenant(t, tx, tenantID)
	require.True(t, rep.OK(), "%+v", rep.Problems)
	require.Equal(t, 1, rep.TenantsChecked)
	require.Equal(t, int64(4), rep.EventsChecked)
}

func TestRecordConcurrentAppendsSerialize(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenantID := newTenant(t, pool)

	// The tenant has no head yet, so the goroutines also race to create it.
	const workers, each = 8, 5
	start := make(chan struct{})
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			<-start
			for range each {
				errs <- pg.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
					return audit.Record(ctx, tx, audit.Event{TenantID: tenantID, Actor: alice, Action: "thing.create"})
				})
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	rows := chain(t, pool, tenantID)
	require.Len(t, rows, workers*each)
	for i, r := range rows {
		require.Equal(t, int64(i+1), r.Seq)
		if i > 0 {
			require.Equal(t, rows[i-1].Hash, r.PrevHash)
			require.False(t, r.CreatedAt.Before(rows[i-1].CreatedAt), "created_at follows seq")
		}
	}
	rep := verifyTenant(t, pool, tenantID)
	require.True(t, rep.OK(), "%+v", rep.Problems)
	require.Equal(t, int64(workers*each), rep.EventsChecked)
}

func TestRecordRollsBackWithCaller(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenantID := newTenant(t, pool)

	err := pg.WithTx(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) error {
		require.NoError(t, audit.Record(ctx, tx, audit.Event{TenantID: tenantID, Actor: alice, Action: "thing.delete"}))
		return context.Canceled // the change failed, so must its audit event
	})
	require.ErrorIs(t, err, context.Canceled)

	page, err := audit.List(t.Context(), pool, tenantID, audit.Filter{})
	require.NoError(t, err)
	require.Empty(t, page.Events)
}

func TestRecordRejectsInvalidEvents(t *testing.T) {
	t.Parallel()
	valid := audit.Event{TenantID: uuid.New(), Actor: alice, Action: "thing.create"}
	tests := map[string]func(*audit.Event){
		"no tenant":        func(e *audit.Event) { e.TenantID = uuid.Nil },
		"no action":        func(e *audit.Event) { e.Action = "" },
		"no actor":         func(e *audit.Event) { e.Actor = policy.Principal{} },
		"unencodable diff": func(e *audit.Event) { e.Diff = map[string]any{"f": func() {}} },
		"huge exponent":    func(e *audit.Event) { e.Diff = map[string]any{"n": json.Number("1e999999")} },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := valid
			mutate(&e)
			// Validation fails before any query, so no transaction is needed.
			err := audit.Record(t.Context(), nil, e)
			require.ErrorIs(t, err, audit.ErrInvalidEvent)
		})
	}

	t.Run("unknown tenant", func(t *testing.T) {
		t.Parallel()
		err := audit.Record(t.Context(), pgtest.Tx(t), valid)
		require.ErrorIs(t, err, audit.ErrInvalidEvent)
	})
}

// TestRecordSurvivesJSONBRoundTrip stores numbers and strings that jsonb
// rewrites (exponents, trailing zeros, key order, escapes) and checks the
// chain still verifies from the stored form.
func TestRecordSurvivesJSONBRoundTrip(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	diff := map[string]any{
		"floats":  []any{0.1, 1e21, 1e-7, math.Copysign(0, -1), 123456.789, 5e-324, 1.7976931348623157e308},
		"numbers": []any{json.Number("1.50"), json.Number("1E+2"), json.Number("-0"), json.Number("12345678901234567890123456789")},
		"zz":      map[string]any{"b": true, "a": nil, "": "empty key"},
		"text":    "<tag> & \"quotes\" \u2028 é 😀 \t\n",
		"when":    time.Date(2025, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600)),
	}
	require.NoError(t, audit.Record(t.Context(), tx, audit.Event{TenantID: tenantID, Actor: alice, Action: "thing.update", Diff: diff}))

	rep := verifyTenant(t, tx, tenantID)
	require.True(t, rep.OK(), "%+v", rep.Problems)

	page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	require.True(t, bytes.Contains(page.Events[0].Diff, []byte(`1000000000000000000000`)), string(page.Events[0].Diff))
	require.True(t, bytes.Contains(page.Events[0].Diff, []byte(`12345678901234567890123456789`)), string(page.Events[0].Diff))
}
