package main

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

// auditedTenant creates a tenant with four audit events (seq 1–4).
func auditedTenant(t *testing.T, svc *tenants.Service) tenants.Tenant {
	t.Helper()
	ctx := t.Context()
	ten, err := svc.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: "audit-" + pgtest.Suffix(), Name: "Audit"})
	require.NoError(t, err)
	acc, err := svc.Resolve(ctx, policy.System, ten.Slug)
	require.NoError(t, err)
	for _, name := range []string{"Audit Two", "Audit Three"} {
		acc.Tenant, err = svc.UpdateTenant(ctx, acc, tenants.UpdateTenantInput{Name: &name})
		require.NoError(t, err)
	}
	_, err = svc.CreateAPIKey(ctx, acc, tenants.CreateAPIKeyInput{Name: "ci", Role: policy.RoleViewer})
	require.NoError(t, err)
	var n int
	require.NoError(t, pgtest.Pool(t).QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1`, ten.ID).Scan(&n))
	require.Equal(t, 4, n)
	return ten
}

// tamper runs stmt ($1 tenant id, $2 seq) against one audit event and
// returns a func that puts the original row back; the test's cleanup calls
// it too, so the shared database is left with intact chains.
func tamper(t *testing.T, pool *pgxpool.Pool, tenantID uuid.UUID, seq int64, stmt string) (restore func()) {
	t.Helper()
	var original []byte
	require.NoError(t, pool.QueryRow(t.Context(),
		`SELECT row_to_json(a) FROM audit_events a WHERE tenant_id = $1 AND seq = $2`, tenantID, seq).Scan(&original))
	_, err := pool.Exec(t.Context(), stmt, tenantID, seq)
	require.NoError(t, err)
	restore = sync.OnceFunc(func() {
		ctx := context.Background()
		_, err := pool.Exec(ctx, `DELETE FROM audit_events WHERE tenant_id = $1 AND seq = $2`, tenantID, seq)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `INSERT INTO audit_events SELECT * FROM json_populate_record(NULL::audit_events, $1)`, original)
		require.NoError(t, err)
	})
	t.Cleanup(restore)
	return restore
}

func auditVerifyCmd(t *testing.T, extra ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	args := append([]string{"audit", "verify", "--database-url", pgtest.URL(t)}, extra...)
	err := run(t.Context(), args, &out)
	return out.String(), err
}

// TestAuditVerify checks the command on intact chains, then tampers with two
// tenants' chains. It shares the package database: the all-tenants check runs
// before any tampering, and later checks are limited with --tenant.
func TestAuditVerify(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	svc, err := tenants.NewService(pool, tenants.Config{PasswordCost: 4}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	edited, deleted := auditedTenant(t, svc), auditedTenant(t, svc)

	out, err := auditVerifyCmd(t)
	require.NoError(t, err, out)
	require.Contains(t, out, "ok: every chain verifies")

	out, err = auditVerifyCmd(t, "--tenant", edited.Slug)
	require.NoError(t, err, out)
	require.Contains(t, out, "checked 1 tenant(s), 4 event(s)")

	restoreEdited := tamper(t, pool, edited.ID, 2, `UPDATE audit_events SET diff = '{"x":1}' WHERE tenant_id = $1 AND seq = $2`)
	out, err = auditVerifyCmd(t)
	require.ErrorContains(t, err, "audit chain broken")
	require.Contains(t, out, "tenant "+edited.ID.String()+" seq 2: edited")
	require.NotContains(t, out, "ok:")

	out, err = auditVerifyCmd(t, "--tenant", deleted.Slug)
	require.NoError(t, err, "--tenant must limit the check to one tenant: %s", out)
	require.Contains(t, out, "checked 1 tenant(s), 4 event(s)")

	restoreDeleted := tamper(t, pool, deleted.ID, 2, `DELETE FROM audit_events WHERE tenant_id = $1 AND seq = $2`)
	out, err = auditVerifyCmd(t, "--tenant", deleted.Slug)
	require.ErrorContains(t, err, "audit chain broken: 1 problem(s)")
	require.Contains(t, out, "tenant "+deleted.ID.String()+" seq 2: missing")
	require.NotContains(t, out, edited.ID.String(), "--tenant must not report other tenants")

	// Putting the original rows back makes both chains verify again.
	restoreEdited()
	restoreDeleted()
	for _, slug := range []string{edited.Slug, deleted.Slug} {
		out, err = auditVerifyCmd(t, "--tenant", slug)
		require.NoError(t, err, out)
		require.Contains(t, out, "ok: every chain verifies")
	}
}

func TestAuditVerifyUnknownTenant(t *testing.T) {
	t.Parallel()
	out, err := auditVerifyCmd(t, "--tenant", "no-such-tenant")
	require.ErrorContains(t, err, `tenant "no-such-tenant"`)
	require.ErrorIs(t, err, tenants.ErrNotFound)
	require.Empty(t, out)
}

func TestAuditVerifyBadDatabaseURL(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(t.Context(), []string{"audit", "verify", "--database-url", "not a url"}, &out)
	require.ErrorContains(t, err, "AGENTPLANE_DATABASE_URL")
}
