package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/audit"
)

// Definitions are what a tenant configures before it starts runs: model
// endpoints (models.go) and agents (agents.go). Both are addressed by name
// within their tenant; names are stable because agents refer to endpoints
// by name, so neither can be renamed.

// NamePattern is what a model endpoint's or an agent's name looks like; tool
// group and skill names in an agent follow it too.
const NamePattern = `^[a-z0-9][a-z0-9_-]{0,62}$`

// SecretNamePattern is what a vault secret's name looks like.
const SecretNamePattern = `^[A-Za-z_][A-Za-z0-9_]{0,127}$`

var (
	nameRE      = regexp.MustCompile(NamePattern)
	keySecretRE = regexp.MustCompile(SecretNamePattern)
)

// maxListEntries bounds an agent's tool_groups and skills lists.
const maxListEntries = 100

func checkName(field, name string) error {
	if !nameRE.MatchString(name) {
		return &InvalidError{Field: field, Message: "must match " + NamePattern}
	}
	return nil
}

// checkNames validates a list of names: each matches NamePattern, no
// duplicates, at most maxListEntries.
func checkNames(field string, names []string) error {
	if len(names) > maxListEntries {
		return &InvalidError{Field: field, Message: fmt.Sprintf("must have at most %d entries", maxListEntries)}
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if !nameRE.MatchString(n) {
			return &InvalidError{Field: field, Message: fmt.Sprintf("%q must match %s", n, NamePattern)}
		}
		if seen[n] {
			return &InvalidError{Field: field, Message: fmt.Sprintf("%q is listed twice", n)}
		}
		seen[n] = true
	}
	return nil
}

func checkLength(field, s string, lo, hi int) error {
	if n := utf8.RuneCountInString(s); n < lo || n > hi {
		return &InvalidError{Field: field, Message: fmt.Sprintf("must be %d to %d characters", lo, hi)}
	}
	return nil
}

func checkRange(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return &InvalidError{Field: field, Message: fmt.Sprintf("must be between %d and %d", lo, hi)}
	}
	return nil
}

// recordDefinition appends the audit event of a definition change in tx.
// Diffs name secrets, never hold their values.
func recordDefinition(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, actor policy.Principal, action, kind string, id uuid.UUID, diff map[string]any) error {
	err := audit.Record(ctx, tx, audit.Event{
		TenantID: tenantID, Actor: actor, Action: action, TargetKind: kind, TargetID: id.String(), Diff: diff,
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// fieldChanges keeps the fields whose value changed, as {"field": {"from", "to"}}.
func fieldChanges(fields map[string][2]any) map[string]any {
	out := map[string]any{}
	for k, v := range fields {
		if fmt.Sprint(v[0]) != fmt.Sprint(v[1]) {
			out[k] = map[string]any{"from": v[0], "to": v[1]}
		}
	}
	return out
}

// textDigest stands in for long free text (instructions) in audit diffs:
// its length and a hash prefix tell edits apart without copying the text.
func textDigest(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%d chars, sha256:%x", utf8.RuneCountInString(s), sum[:6])
}

// deref renders an optional value for a diff: nil stays nil.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
