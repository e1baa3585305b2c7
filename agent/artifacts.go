package agent

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
)

// EventArtifactPresented reports paths a run declared with present_files
// (DESIGN §5).
const EventArtifactPresented = "artifact.presented"

// PresentFiles appends paths to the thread's ordered, de-duplicated
// artifact list and records an artifact.presented event on the run, in one
// transaction, and returns the whole list. Every path must already be a
// clean virtual path under /mnt/user-data/outputs (the present_files tool
// normalizes and checks existence first); one bad path refuses them all.
func (s *Service) PresentFiles(ctx context.Context, tenantID, threadID, runID uuid.UUID, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, &InvalidError{Field: "paths", Message: "must name at least one file"}
	}
	for _, p := range paths {
		if !presentable(p) {
			return nil, &InvalidError{Field: "paths", Message: fmt.Sprintf("%q is not a clean path under %s", p, sandbox.Outputs)}
		}
	}
	return pg.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		q := agentdb.New(tx)
		if _, err := q.LockThread(ctx, agentdb.LockThreadParams{TenantID: tenantID, ID: threadID}); err != nil {
			return nil, notFound(err, "thread", threadID.String())
		}
		run, err := q.RunByID(ctx, agentdb.RunByIDParams{TenantID: tenantID, ID: runID})
		if err != nil {
			return nil, notFound(err, "run", runID.String())
		}
		if run.ThreadID != threadID {
			return nil, &NotFoundError{Kind: "run", Key: runID.String()}
		}
		var added []string
		for _, p := range paths {
			n, err := q.AddArtifact(ctx, agentdb.AddArtifactParams{TenantID: tenantID, ThreadID: threadID, Path: p, RunID: runID})
			if err != nil {
				return nil, fmt.Errorf("add artifact %s: %w", p, err)
			}
			if n > 0 {
				added = append(added, p)
			}
		}
		all, err := q.ListArtifacts(ctx, agentdb.ListArtifactsParams{TenantID: tenantID, ThreadID: threadID})
		if err != nil {
			return nil, fmt.Errorf("list artifacts of thread %s: %w", threadID, err)
		}
		if _, err := s.appendEvent(ctx, tx, tenantID, runID, nil, EventArtifactPresented, map[string]any{
			"paths": paths, "added": nonNil(added), "artifacts": all,
		}); err != nil {
			return nil, err
		}
		return all, nil
	})
}

// Artifacts returns the thread's presented paths in the order they were
// first presented.
func (s *Service) Artifacts(ctx context.Context, a tenants.Access, threadID uuid.UUID) ([]string, error) {
	if _, err := s.GetThread(ctx, a, threadID); err != nil {
		return nil, err
	}
	all, err := agentdb.New(s.pool).ListArtifacts(ctx, agentdb.ListArtifactsParams{TenantID: a.Tenant.ID, ThreadID: threadID})
	if err != nil {
		return nil, fmt.Errorf("list artifacts of thread %s: %w", threadID, err)
	}
	return nonNil(all), nil
}

// presentable reports whether p is a clean virtual path strictly under the
// outputs folder.
func presentable(p string) bool {
	return p != "" && !strings.ContainsRune(p, 0) && path.Clean(p) == p && strings.HasPrefix(p, sandbox.Outputs+"/")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
