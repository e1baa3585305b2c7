package audit_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/tenants/audit"
)

func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper []string // each run with $1 = tenant id
		want   []audit.Problem
	}{
		{
			name:   "diff edited",
			tamper: []string{`UPDATE audit_events SET diff = '{"n": 3, "name": "innocent"}' WHERE tenant_id = $1 AND seq = 3`},
			want:   []audit.Problem{{Seq: 3, Kind: audit.ProblemEdited}},
		},
		{
			name:   "action edited",
			tamper: []string{`UPDATE audit_events SET action = 'thing.read' WHERE tenant_id = $1 AND seq = 2`},
			want:   []audit.Problem{{Seq: 2, Kind: audit.ProblemEdited}},
		},
		{
			name:   "created_at edited",
			tamper: []string{`UPDATE audit_events SET created_at = created_at - interval '1 day' WHERE tenant_id = $1 AND seq = 1`},
			want:   []audit.Problem{{Seq: 1, Kind: audit.ProblemEdited}},
		},
		{
			name:   "hash replaced",
			tamper: []string{`UPDATE audit_events SET hash = sha256(hash) WHERE tenant_id = $1 AND seq = 2`},
			want:   []audit.Problem{{Seq: 2, Kind: audit.ProblemEdited}, {Seq: 3, Kind: audit.ProblemBrokenLink}},
		},
		{
			name:   "middle row deleted",
			tamper: []string{`DELETE FROM audit_events WHERE tenant_id = $1 AND seq = 3`},
			want:   []audit.Problem{{Seq: 3, Kind: audit.ProblemMissing}},
		},
		{
			name:   "first row deleted",
			tamper: []string{`DELETE FROM audit_events WHERE tenant_id = $1 AND seq = 1`},
			want:   []audit.Problem{{Seq: 1, Kind: audit.ProblemMissing}},
		},
		{
			name:   "last row deleted",
			tamper: []string{`DELETE FROM audit_events WHERE tenant_id = $1 AND seq = 5`},
			want:   []audit.Problem{{Seq: 5, Kind: audit.ProblemHeadMismatch}},
		},
		{
			name:   "head hash altered",
			tamper: []string{`UPDATE audit_heads SET hash = sha256(hash) WHERE tenant_id = $1`},
			want:   []audit.Problem{{Seq: 5, Kind: audit.ProblemHeadMismatch}},
		},
		{
			name:   "head deleted",
			tamper: []string{`DELETE FROM audit_heads WHERE tenant_id = $1`},
			want:   []audit.Problem{{Seq: 5, Kind: audit.ProblemHeadMismatch}},
		},
		{
			name: "rows renumbered to hide a deletion",
			tamper: []string{
				`DELETE FROM audit_events WHERE tenant_id = $1 AND seq = 5`,
				`UPDATE audit_events SET seq = 5 WHERE tenant_id = $1 AND seq = 4`,
			},
			want: []audit.Problem{
				{Seq: 4, Kind: audit.ProblemMissing},
				{Seq: 5, Kind: audit.ProblemEdited},
				{Seq: 5, Kind: audit.ProblemHeadMismatch},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tx := pgtest.Tx(t)
			tenantID := newTenant(t, tx)
			record(t, tx, tenantID, 5)
			require.True(t, verifyTenant(t, tx, tenantID).OK())

			for _, sql := range tt.tamper {
				exec(t, tx, sql, tenantID)
			}

			rep := verifyTenant(t, tx, tenantID)
			require.False(t, rep.OK())
			got := make([]audit.Problem, len(rep.Problems))
			for i, p := range rep.Problems {
				require.Equal(t, tenantID, p.TenantID)
				require.NotEmpty(t, p.Detail)
				got[i] = audit.Problem{Seq: p.Seq, Kind: p.Kind}
			}
			require.Equal(t, tt.want, got, "%+v", rep.Problems)
		})
	}
}

func TestVerifyAllTenants(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	good, bad, empty := newTenant(t, tx), newTenant(t, tx), newTenant(t, tx)
	record(t, tx, good, 3)
	record(t, tx, bad, 3)
	exec(t, tx, `UPDATE audit_events SET target_id = 'other' WHERE tenant_id = $1 AND seq = 2`, bad)

	rep, err := audit.Verify(t.Context(), tx, nil)
	require.NoError(t, err)
	// Other tests commit chains too (some tampered), so look only at ours.
	require.GreaterOrEqual(t, rep.TenantsChecked, 2)
	require.GreaterOrEqual(t, rep.EventsChecked, int64(6))
	byTenant := map[uuid.UUID][]audit.Problem{}
	for _, p := range rep.Problems {
		byTenant[p.TenantID] = append(byTenant[p.TenantID], p)
	}
	require.Empty(t, byTenant[good])
	require.Empty(t, byTenant[empty])
	require.Len(t, byTenant[bad], 1)
	require.Equal(t, audit.ProblemEdited, byTenant[bad][0].Kind)
	require.Equal(t, int64(2), byTenant[bad][0].Seq)
}

func TestVerifyTenantWithoutEvents(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	rep := verifyTenant(t, tx, newTenant(t, tx))
	require.True(t, rep.OK())
	require.Equal(t, 1, rep.TenantsChecked)
	require.Zero(t, rep.EventsChecked)
}

func TestVerifyLongChainAcrossBatches(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	record(t, tx, tenantID, 1203)
	exec(t, tx, `DELETE FROM audit_events WHERE tenant_id = $1 AND seq = 1001`, tenantID)

	rep := verifyTenant(t, tx, tenantID)
	require.Equal(t, int64(1202), rep.EventsChecked)
	require.Len(t, rep.Problems, 1)
	require.Equal(t, audit.Problem{TenantID: tenantID, Seq: 1001, Kind: audit.ProblemMissing, Detail: rep.Problems[0].Detail}, rep.Problems[0])
}
