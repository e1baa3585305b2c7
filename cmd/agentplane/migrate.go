package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/migrations"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
)

func migrateCmd(ctx context.Context, args []string) error {
	cfg, err := parseConfig(args)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == defaultDatabaseURL {
		if err := pg.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
			return fmt.Errorf("AGENTPLANE_DATABASE_URL: %w", err)
		}
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("AGENTPLANE_DATABASE_URL: %w", err)
	}
	defer pool.Close()
	return migrations.Apply(ctx, pool, cfg.logger())
}

// auditVerify recomputes the hash chains and fails when any is broken.
func auditVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	slug := fs.String("tenant", "", "verify only this tenant (slug)")
	dbURL := fs.String("database-url", envOr("DATABASE_URL", defaultDatabaseURL), "PostgreSQL URL (AGENTPLANE_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, err := pg.Open(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("AGENTPLANE_DATABASE_URL: %w", err)
	}
	defer pool.Close()
	var tenantID *uuid.UUID
	if *slug != "" {
		svc, err := tenants.NewService(pool, tenants.Config{}, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		a, err := svc.Resolve(ctx, policy.System, *slug)
		if err != nil {
			return fmt.Errorf("tenant %q: %w", *slug, err)
		}
		tenantID = &a.Tenant.ID
	}
	report, err := audit.Verify(ctx, pool, tenantID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "checked %d tenant(s), %d event(s)\n", report.TenantsChecked, report.EventsChecked)
	if report.OK() {
		fmt.Fprintln(stdout, "ok: every chain verifies")
		return nil
	}
	var b strings.Builder
	for _, p := range report.Problems {
		fmt.Fprintf(&b, "tenant %s seq %d: %s: %s\n", p.TenantID, p.Seq, p.Kind, p.Detail)
	}
	fmt.Fprint(stdout, b.String())
	return fmt.Errorf("audit chain broken: %d problem(s)", len(report.Problems))
}
