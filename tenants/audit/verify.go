package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/tenants/audit/internal/auditdb"
)

// ProblemKind classifies a break in a chain.
type ProblemKind string

const (
	// ProblemEdited: the row's content no longer hashes to its stored hash.
	ProblemEdited ProblemKind = "edited"
	// ProblemMissing: seqs are absent before this row (rows were deleted).
	ProblemMissing ProblemKind = "missing"
	// ProblemBrokenLink: the row's prev_hash is not the previous row's hash.
	ProblemBrokenLink ProblemKind = "broken_link"
	// ProblemHeadMismatch: the head row does not point at the chain's last
	// event (the tail was deleted, or the head is missing or altered).
	ProblemHeadMismatch ProblemKind = "head_mismatch"
)

// Problem is one break found by Verify. Seq is the first affected seq.
type Problem struct {
	TenantID uuid.UUID
	Seq      int64
	Kind     ProblemKind
	Detail   string
}

// Report is the outcome of Verify.
type Report struct {
	TenantsChecked int
	EventsChecked  int64
	Problems       []Problem
}

// OK reports whether every checked chain is intact.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// verifyBatch bounds how many rows Verify holds in memory at once.
const verifyBatch = 1000

// Verify recomputes the chain of tenantID, or of every tenant with audit
// data when tenantID is nil. Broken chains are problems in the report; the
// error is for failures to read. Run it in a REPEATABLE READ transaction for
// a single snapshot; on a pool it reads each head before its events, so
// events appended meanwhile extend the chain past the head and are checked
// without being reported.
//
// What it cannot see: deleting the newest events and rewriting the head to
// match leaves a valid shorter chain; only a head hash kept outside the
// database detects that.
func Verify(ctx context.Context, db pg.DBTX, tenantID *uuid.UUID) (Report, error) {
	q := auditdb.New(db)
	var tenants []uuid.UUID
	if tenantID != nil {
		tenants = []uuid.UUID{*tenantID}
	} else {
		var err error
		if tenants, err = q.ListAuditedTenants(ctx); err != nil {
			return Report{}, fmt.Errorf("list audited tenants: %w", err)
		}
	}
	var r Report
	for _, t := range tenants {
		if err := r.verifyTenant(ctx, q, t); err != nil {
			return r, fmt.Errorf("verify audit chain of tenant %s: %w", t, err)
		}
	}
	return r, nil
}

func (r *Report) verifyTenant(ctx context.Context, q *auditdb.Queries, tenantID uuid.UUID) error {
	head, err := q.GetHead(ctx, tenantID)
	hasHead := !errors.Is(err, pgx.ErrNoRows)
	if err != nil && hasHead {
		return fmt.Errorf("read head: %w", err)
	}
	r.TenantsChecked++

	prevSeq, prevHash := int64(0), genesisHash[:]
	var headRow *auditdb.AuditEvent
	for {
		rows, err := q.ListChain(ctx, auditdb.ListChainParams{TenantID: tenantID, AfterSeq: prevSeq, MaxRows: verifyBatch})
		if err != nil {
			return fmt.Errorf("read events after seq %d: %w", prevSeq, err)
		}
		for i := range rows {
			row := &rows[i]
			r.EventsChecked++
			r.checkRow(prevSeq, prevHash, row)
			if hasHead && row.Seq == head.Seq {
				headRow = row
			}
			prevSeq, prevHash = row.Seq, row.Hash
		}
		if len(rows) < verifyBatch {
			break
		}
	}

	add := func(seq int64, detail string, args ...any) {
		r.Problems = append(r.Problems, Problem{tenantID, seq, ProblemHeadMismatch, fmt.Sprintf(detail, args...)})
	}
	switch {
	case !hasHead && prevSeq > 0:
		add(prevSeq, "events up to seq %d but no head row", prevSeq)
	case !hasHead || head.Seq == 0:
	case headRow == nil:
		add(head.Seq, "head at seq %d but no event has that seq (chain ends at %d)", head.Seq, prevSeq)
	case !bytes.Equal(headRow.Hash, head.Hash):
		add(head.Seq, "head hash differs from the hash of event %d", head.Seq)
	}
	return nil
}

// checkRow compares a row with its predecessor in the chain. After a gap
// only the gap is reported: the link is then necessarily broken too.
func (r *Report) checkRow(prevSeq int64, prevHash []byte, row *auditdb.AuditEvent) {
	add := func(seq int64, kind ProblemKind, detail string, args ...any) {
		r.Problems = append(r.Problems, Problem{row.TenantID, seq, kind, fmt.Sprintf(detail, args...)})
	}
	switch {
	case row.Seq != prevSeq+1:
		add(prevSeq+1, ProblemMissing, "seq %d to %d missing", prevSeq+1, row.Seq-1)
	case !bytes.Equal(row.PrevHash, prevHash):
		add(row.Seq, ProblemBrokenLink, "prev_hash is not the hash of seq %d", prevSeq)
	}
	sum, err := hashRow(*row)
	switch {
	case err != nil:
		add(row.Seq, ProblemEdited, "content cannot be canonicalized: %v", err)
	case !bytes.Equal(sum, row.Hash):
		add(row.Seq, ProblemEdited, "content does not match its hash")
	}
}
