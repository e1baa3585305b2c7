package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var alice = policy.Principal{Kind: policy.KindUser, ID: "user-alice", Label: "alice@example.com"}

// newTenant inserts a tenant row directly: the audit tables reference tenants
// and this package must not depend on the tenants service.
func newTenant(t *testing.T, db pg.DBTX) uuid.UUID {
	t.Helper()
	id := uuid.New()
	_, err := db.Exec(t.Context(), `INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3)`,
		id, "t-"+id.String()[:12], "Tenant "+id.String())
	require.NoError(t, err)
	return id
}

// record appends n events "thing.update" with target thing-<i> for i in 1..n.
func record(t *testing.T, tx pgx.Tx, tenantID uuid.UUID, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		require.NoError(t, audit.Record(t.Context(), tx, audit.Event{
			TenantID:   tenantID,
			Actor:      alice,
			Action:     "thing.update",
			TargetKind: "thing",
			TargetID:   fmt.Sprintf("thing-%d", i),
			Diff:       map[string]any{"n": i, "name": fmt.Sprintf("name %d", i)},
		}))
	}
}

// verifyTenant runs Verify for one tenant.
func verifyTenant(t *testing.T, db pg.DBTX, tenantID uuid.UUID) audit.Report {
	t.Helper()
	rep, err := audit.Verify(t.Context(), db, &tenantID)
	require.NoError(t, err)
	return rep
}

// exec runs a tampering statement as an attacker with database access would.
func exec(t *testing.T, db pg.DBTX, sql string, args ...any) {
	t.Helper()
	tag, err := db.Exec(context.WithoutCancel(t.Context()), sql, args...)
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected(), sql)
}
