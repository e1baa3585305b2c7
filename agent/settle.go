package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
)

// Settlement (DESIGN §10) compares a run's outputs folder at its end with
// the snapshot taken at its first claim. Files created or changed in
// between were produced by the run; the paths it declared with
// present_files must cover at least one of them (equal, or under a
// presented folder), or a run that was going to succeed fails with
// "artifact delivery incomplete". The receipt is written once per run, in
// the transaction that writes the terminal status, before it.

// EventRunSettled carries the run's delivery receipt; it precedes
// run.completed.
const EventRunSettled = "run.settled"

// Delivery verdicts, as stored and returned.
const (
	VerdictDelivered       = "delivered"
	VerdictIncomplete      = "incomplete"
	VerdictNothingProduced = "nothing_produced"
)

// deliveryIncomplete is the error of a run failed by settlement.
const deliveryIncomplete = "artifact delivery incomplete"

// Receipt is a run's delivery receipt. Paths are virtual
// (/mnt/user-data/outputs/...), sorted, except Presented, which keeps the
// order the run declared them in.
type Receipt struct {
	Produced  []string  `json:"produced"`
	Presented []string  `json:"presented"`
	Matched   []string  `json:"matched"`
	Verdict   string    `json:"verdict"`
	SettledAt time.Time `json:"-"`
}

// fileTree is the host tree the service reads threads' files from.
type fileTree = sandbox.Tree

// UseFiles sets the host tree holding threads' user-data (wiring step).
// Without it, uploads and file downloads answer ErrFilesUnavailable and
// settlement finds nothing produced.
func (s *Service) UseFiles(tree sandbox.Tree) { s.files = &tree }

// Receipt returns the run's delivery receipt, nil until the run settled.
func (s *Service) Receipt(ctx context.Context, a tenants.Access, runID uuid.UUID) (*Receipt, error) {
	if _, err := s.GetRun(ctx, a, runID); err != nil {
		return nil, err
	}
	row, err := agentdb.New(s.pool).RunSettlement(ctx, agentdb.RunSettlementParams{TenantID: a.Tenant.ID, RunID: runID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("receipt of run %s: %w", runID, err)
	}
	return receiptFromRow(row)
}

func receiptFromRow(row agentdb.RunSettlement) (*Receipt, error) {
	rc := &Receipt{Verdict: row.Verdict, SettledAt: row.CreatedAt}
	for _, f := range []struct {
		raw json.RawMessage
		dst *[]string
	}{{row.Produced, &rc.Produced}, {row.Presented, &rc.Presented}, {row.Matched, &rc.Matched}} {
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return nil, fmt.Errorf("decode receipt of run %s: %w", row.RunID, err)
		}
		*f.dst = nonNil(*f.dst)
	}
	return rc, nil
}

// fileState is one regular file of an outputs folder.
type fileState struct {
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
	// SHA256 is empty when the file could not be read; then size and
	// mtime tell whether it changed.
	SHA256 string `json:"sha256"`
}

// changed reports whether a file differs from its snapshot: by content
// when both were read, else by size and mtime.
func (f fileState) changed(before fileState) bool {
	if f.SHA256 != "" && before.SHA256 != "" {
		return f.SHA256 != before.SHA256
	}
	return f.Size != before.Size || !f.MTime.Equal(before.MTime)
}

// scanOutputs reads a thread's outputs folder on the host: every regular
// file, keyed by virtual path. Symlinks are neither followed nor listed
// and the walk goes through an os.Root, so it never leaves the tree. A
// folder that does not exist yet is empty.
func (s *Service) scanOutputs(ctx context.Context, tenantID, threadID uuid.UUID) (map[string]fileState, error) {
	out := map[string]fileState{}
	if s.files == nil {
		return out, nil
	}
	root, err := os.OpenRoot(s.files.Thread(tenantID, threadID).UserDataDir())
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open user-data of thread %s: %w", threadID, err)
	}
	defer root.Close()
	const dir = "outputs" // relative to user-data
	err = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // removed meanwhile, or no outputs folder yet
		case err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case !d.Type().IsRegular():
			return nil
		}
		st, ok := hashFile(root, p)
		if ok {
			out[path.Join(sandbox.UserData, p)] = st
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan outputs of thread %s: %w", threadID, err)
	}
	return out, nil
}

// hashFile reads one file through the root. ok is false when it vanished
// or is no longer a regular file.
func hashFile(root *os.Root, p string) (fileState, bool) {
	f, err := root.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fileState{}, false
		}
		info, serr := root.Lstat(p)
		if serr != nil || !info.Mode().IsRegular() {
			return fileState{}, false
		}
		return fileState{Size: info.Size(), MTime: info.ModTime().UTC()}, true
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return fileState{}, false
	}
	st := fileState{Size: info.Size(), MTime: info.ModTime().UTC()}
	h := sha256.New()
	if _, err := io.Copy(h, f); err == nil {
		st.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return st, true
}

// snapshotOutputs records the outputs folder at the run's first claim; a
// resumed run keeps the snapshot its first worker took (tools may have
// written since).
func (r *runState) snapshotOutputs(ctx context.Context) error {
	key := agentdb.HasOutputSnapshotParams{TenantID: r.row.TenantID, RunID: r.row.ID}
	taken, err := agentdb.New(r.s.pool).HasOutputSnapshot(ctx, key)
	if err != nil {
		return fmt.Errorf("look up outputs snapshot: %w", err)
	}
	if taken {
		return nil
	}
	files, err := r.s.scanOutputs(ctx, r.row.TenantID, r.row.ThreadID)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(files)
	if err != nil {
		return fmt.Errorf("encode outputs snapshot: %w", err)
	}
	return r.inStep(ctx, func(ctx context.Context, tx pgx.Tx) error {
		err := agentdb.New(tx).InsertOutputSnapshot(ctx, agentdb.InsertOutputSnapshotParams{
			TenantID: r.row.TenantID, RunID: r.row.ID, Files: raw,
		})
		if err != nil {
			return fmt.Errorf("store outputs snapshot: %w", err)
		}
		return nil
	})
}

// produced lists the outputs the run created or changed since its
// snapshot, sorted. A run without a snapshot never reached its tools and
// produced nothing.
func (r *runState) produced(ctx context.Context) ([]string, error) {
	raw, err := agentdb.New(r.s.pool).OutputSnapshot(ctx, agentdb.OutputSnapshotParams{TenantID: r.row.TenantID, RunID: r.row.ID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read outputs snapshot: %w", err)
	}
	var before map[string]fileState
	if err := json.Unmarshal(raw, &before); err != nil {
		return nil, fmt.Errorf("decode outputs snapshot: %w", err)
	}
	after, err := r.s.scanOutputs(ctx, r.row.TenantID, r.row.ThreadID)
	if err != nil {
		return nil, err
	}
	var out []string
	for p, st := range after {
		if prev, ok := before[p]; !ok || st.changed(prev) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// settle writes the run's receipt (once: a resumed finish keeps the first),
// appends run.settled, and returns the outcome the receipt implies: a run
// that was going to succeed fails when its delivery is incomplete. It runs
// in finish's fenced transaction, before the terminal status.
func (r *runState) settle(ctx context.Context, tx pgx.Tx, out outcome, produced []string) (outcome, error) {
	q := agentdb.New(tx)
	presented, err := r.presented(ctx, q)
	if err != nil {
		return out, err
	}
	rc := receiptFor(produced, presented)
	enc := func(v []string) json.RawMessage { b, _ := json.Marshal(nonNil(v)); return b }
	if err := q.InsertSettlement(ctx, agentdb.InsertSettlementParams{
		TenantID: r.row.TenantID, RunID: r.row.ID, Produced: enc(rc.Produced), Presented: enc(rc.Presented),
		Matched: enc(rc.Matched), Verdict: rc.Verdict,
	}); err != nil {
		return out, fmt.Errorf("store delivery receipt: %w", err)
	}
	row, err := q.RunSettlement(ctx, agentdb.RunSettlementParams{TenantID: r.row.TenantID, RunID: r.row.ID})
	if err != nil {
		return out, fmt.Errorf("read delivery receipt: %w", err)
	}
	stored, err := receiptFromRow(row)
	if err != nil {
		return out, err
	}
	if stored.Verdict == VerdictIncomplete && out.status == StatusSucceeded {
		out.status, out.err = StatusFailed, deliveryIncomplete
	}
	if _, err := r.s.appendEvent(ctx, tx, r.row.TenantID, r.row.ID, &r.epoch, EventRunSettled, stored); err != nil {
		return out, err
	}
	return out, nil
}

// presented lists the paths this run declared with present_files, first
// declared first: those its artifact.presented events name and those it
// added to the thread's list.
func (r *runState) presented(ctx context.Context, q *agentdb.Queries) ([]string, error) {
	fromEvents, err := q.RunPresentedEventPaths(ctx, agentdb.RunPresentedEventPathsParams{TenantID: r.row.TenantID, RunID: r.row.ID})
	if err != nil {
		return nil, fmt.Errorf("read presented paths: %w", err)
	}
	fromRows, err := q.RunArtifactPaths(ctx, agentdb.RunArtifactPathsParams{TenantID: r.row.TenantID, ThreadID: r.row.ThreadID, RunID: r.row.ID})
	if err != nil {
		return nil, fmt.Errorf("read run artifacts: %w", err)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range slices.Concat(fromEvents, fromRows) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// receiptFor applies the settlement rule: nothing produced, delivered when
// at least one produced path is covered by a presented one, else
// incomplete.
func receiptFor(produced, presented []string) Receipt {
	rc := Receipt{Produced: nonNil(produced), Presented: nonNil(presented), Matched: []string{}}
	for _, p := range produced {
		if covered(p, presented) {
			rc.Matched = append(rc.Matched, p)
		}
	}
	switch {
	case len(produced) == 0:
		rc.Verdict = VerdictNothingProduced
	case len(rc.Matched) > 0:
		rc.Verdict = VerdictDelivered
	default:
		rc.Verdict = VerdictIncomplete
	}
	return rc
}

// covered reports whether path p is a presented path or under a presented
// folder.
func covered(p string, presented []string) bool {
	for _, q := range presented {
		q = strings.TrimSuffix(q, "/")
		if q != "" && (p == q || strings.HasPrefix(p, q+"/")) {
			return true
		}
	}
	return false
}
