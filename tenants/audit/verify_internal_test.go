package audit

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit/internal/auditdb"
)

// An attacker who knows the encoding can edit a row and recompute its hash;
// the next event's prev_hash still names the original, so the link breaks.
func TestVerifyDetectsRehashedEdit(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	ctx := t.Context()
	tenantID := uuid.New()
	_, err := tx.Exec(ctx, `INSERT INTO tenants (id, slug, name) VALUES ($1, $2, 'x')`, tenantID, tenantID.String())
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, Record(ctx, tx, Event{TenantID: tenantID, Actor: policy.System, Action: "thing.update"}))
	}

	rows, err := auditdb.New(tx).ListChain(ctx, auditdb.ListChainParams{TenantID: tenantID, MaxRows: 10})
	require.NoError(t, err)
	forged := rows[1]
	forged.Action = "thing.read"
	forged.Hash, err = hashRow(forged)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE audit_events SET action = $3, hash = $4 WHERE tenant_id = $1 AND seq = $2`,
		tenantID, forged.Seq, forged.Action, forged.Hash)
	require.NoError(t, err)

	rep, err := Verify(ctx, tx, &tenantID)
	require.NoError(t, err)
	require.Len(t, rep.Problems, 1, "%+v", rep.Problems)
	require.Equal(t, ProblemBrokenLink, rep.Problems[0].Kind)
	require.Equal(t, int64(3), rep.Problems[0].Seq)
}
