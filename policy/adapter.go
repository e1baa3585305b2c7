package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/policy/internal/policydb"
)

// ErrUnknownTenant is returned when a rule's domain is a UUID that names no
// tenant: tenant rules must belong to a real tenant row.
var ErrUnknownTenant = errors.New("unknown tenant")

// Adapter persists Casbin rules in the casbin_rules table.
//
// It assumes the RBAC-with-domains layout: "p" rules are (sub, dom, obj, act,
// ...) so their domain is v1, and "g" rules are (user, role, dom) so their
// domain is v2. When the domain parses as a UUID the rule belongs to that
// tenant and tenant_id repeats it (the foreign key then requires the tenant
// to exist); any other domain, such as "*", makes a platform-wide rule with
// tenant_id NULL. Keeping tenant_id as a real column is what lets one tenant's
// rules be loaded, listed or deleted without parsing strings.
//
// Adding a rule that is already stored is a no-op, not an error, and removing
// one that is not stored is a no-op too, so replicas applying the same change
// do not fail. Use one Adapter per enforcer: IsFiltered reports on the last
// load made through this Adapter.
type Adapter struct {
	db       adapterDB
	filtered atomic.Bool
}

// adapterDB is a pool, or a transaction in tests (WithTx then uses savepoints).
type adapterDB interface {
	pg.DBTX
	pg.Beginner
}

var (
	_ persist.BatchAdapter     = (*Adapter)(nil)
	_ persist.UpdatableAdapter = (*Adapter)(nil)
	_ persist.FilteredAdapter  = (*Adapter)(nil)
)

// NewAdapter returns an Adapter storing rules through pool.
func NewAdapter(pool *pgxpool.Pool) *Adapter {
	return &Adapter{db: pool}
}

// TenantFilter is the filter LoadFilteredPolicy accepts (as a value, not a
// pointer). It loads the rules of one tenant plus every platform-wide rule,
// which is all an enforcer serving that tenant needs. A zero TenantID loads
// the platform-wide rules alone.
type TenantFilter struct {
	TenantID uuid.UUID
}

// casbinCtx is the context for every statement: Casbin's adapter interfaces
// take none, so there is no caller context to pass on.
func casbinCtx() context.Context { return context.Background() }

// LoadPolicy loads every stored rule into m, in insertion order.
func (a *Adapter) LoadPolicy(m model.Model) error {
	rows, err := policydb.New(a.db).ListRules(casbinCtx())
	if err != nil {
		return casbinError("load casbin rules", err)
	}
	if err := loadCasbinRows(m, rows); err != nil {
		return fmt.Errorf("load casbin rules: %w", err)
	}
	a.filtered.Store(false)
	return nil
}

// LoadFilteredPolicy loads the rules a TenantFilter selects into m. The
// enforcer then refuses SavePolicy, which would otherwise erase the rules of
// every other tenant.
func (a *Adapter) LoadFilteredPolicy(m model.Model, filter any) error {
	f, ok := filter.(TenantFilter)
	if !ok {
		return fmt.Errorf("load filtered casbin rules: filter is %T, want policy.TenantFilter", filter)
	}
	var tenantID *uuid.UUID
	if f.TenantID != uuid.Nil {
		tenantID = &f.TenantID
	}
	rows, err := policydb.New(a.db).ListRulesForTenant(casbinCtx(), tenantID)
	if err != nil {
		return casbinError(fmt.Sprintf("load casbin rules for tenant %s", f.TenantID), err)
	}
	if err := loadCasbinRows(m, rows); err != nil {
		return fmt.Errorf("load casbin rules for tenant %s: %w", f.TenantID, err)
	}
	a.filtered.Store(true)
	return nil
}

// IsFiltered reports whether the last load through a was filtered.
func (a *Adapter) IsFiltered() bool { return a.filtered.Load() }

// SavePolicy replaces every stored rule with the rules in m, in one
// transaction so readers never see an empty or half-written policy.
func (a *Adapter) SavePolicy(m model.Model) error {
	err := pg.WithTx(casbinCtx(), a.db, func(ctx context.Context, tx pgx.Tx) error {
		q := policydb.New(tx)
		if err := q.DeleteAllRules(ctx); err != nil {
			return err
		}
		for _, sec := range []string{"p", "g"} {
			// Sorted so rule ids, and so load order, are deterministic.
			for _, ptype := range slices.Sorted(maps.Keys(m[sec])) {
				if err := insertCasbinRules(ctx, q, ptype, m[sec][ptype].Policy); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return casbinError("save casbin rules", err)
}

// AddPolicy stores one rule.
func (a *Adapter) AddPolicy(sec, ptype string, rule []string) error {
	err := insertCasbinRules(casbinCtx(), policydb.New(a.db), ptype, [][]string{rule})
	return casbinError(fmt.Sprintf("add casbin rule %s %v", ptype, rule), err)
}

// AddPolicies stores rules, all or none.
func (a *Adapter) AddPolicies(sec, ptype string, rules [][]string) error {
	err := pg.WithTx(casbinCtx(), a.db, func(ctx context.Context, tx pgx.Tx) error {
		return insertCasbinRules(ctx, policydb.New(tx), ptype, rules)
	})
	return casbinError(fmt.Sprintf("add %d casbin %s rules", len(rules), ptype), err)
}

// RemovePolicy deletes one rule.
func (a *Adapter) RemovePolicy(sec, ptype string, rule []string) error {
	err := deleteCasbinRules(casbinCtx(), policydb.New(a.db), ptype, [][]string{rule})
	return casbinError(fmt.Sprintf("remove casbin rule %s %v", ptype, rule), err)
}

// RemovePolicies deletes rules, all or none.
func (a *Adapter) RemovePolicies(sec, ptype string, rules [][]string) error {
	err := pg.WithTx(casbinCtx(), a.db, func(ctx context.Context, tx pgx.Tx) error {
		return deleteCasbinRules(ctx, policydb.New(tx), ptype, rules)
	})
	return casbinError(fmt.Sprintf("remove %d casbin %s rules", len(rules), ptype), err)
}

// RemoveFilteredPolicy deletes the rules whose values, from fieldIndex on,
// equal fieldValues; an empty value matches anything, as Casbin defines it.
func (a *Adapter) RemoveFilteredPolicy(sec, ptype string, fieldIndex int, fieldValues ...string) error {
	_, err := deleteFilteredCasbinRules(casbinCtx(), policydb.New(a.db), ptype, fieldIndex, fieldValues)
	return casbinError(fmt.Sprintf("remove casbin %s rules matching %v at %d", ptype, fieldValues, fieldIndex), err)
}

// UpdatePolicy replaces oldRule with newRule in one transaction.
func (a *Adapter) UpdatePolicy(sec, ptype string, oldRule, newRule []string) error {
	// UpdatePolicies wraps its errors with the operation already.
	return a.UpdatePolicies(sec, ptype, [][]string{oldRule}, [][]string{newRule})
}

// UpdatePolicies replaces oldRules[i] with newRules[i], all or none.
func (a *Adapter) UpdatePolicies(sec, ptype string, oldRules, newRules [][]string) error {
	if len(oldRules) != len(newRules) {
		return fmt.Errorf("update casbin %s rules: %d old rules but %d new", ptype, len(oldRules), len(newRules))
	}
	err := pg.WithTx(casbinCtx(), a.db, func(ctx context.Context, tx pgx.Tx) error {
		q := policydb.New(tx)
		if err := deleteCasbinRules(ctx, q, ptype, oldRules); err != nil {
			return err
		}
		return insertCasbinRules(ctx, q, ptype, newRules)
	})
	return casbinError(fmt.Sprintf("update %d casbin %s rules", len(oldRules), ptype), err)
}

// UpdateFilteredPolicies replaces the rules RemoveFilteredPolicy would delete
// with newRules, in one transaction, and returns the rules it deleted.
func (a *Adapter) UpdateFilteredPolicies(sec, ptype string, newRules [][]string, fieldIndex int, fieldValues ...string) ([][]string, error) {
	old, err := pg.WithTxV(casbinCtx(), a.db, func(ctx context.Context, tx pgx.Tx) ([][]string, error) {
		q := policydb.New(tx)
		old, err := deleteFilteredCasbinRules(ctx, q, ptype, fieldIndex, fieldValues)
		if err != nil {
			return nil, err
		}
		return old, insertCasbinRules(ctx, q, ptype, newRules)
	})
	if err != nil {
		return nil, casbinError(fmt.Sprintf("update casbin %s rules matching %v at %d", ptype, fieldValues, fieldIndex), err)
	}
	return old, nil
}

func loadCasbinRows(m model.Model, rows []policydb.CasbinRule) error {
	for _, r := range rows {
		line := append([]string{r.Ptype}, casbinRuleFromRow(r)...)
		if err := persist.LoadPolicyArray(line, m); err != nil {
			return fmt.Errorf("rule %d %v: %w", r.ID, line, err)
		}
	}
	return nil
}

func insertCasbinRules(ctx context.Context, q *policydb.Queries, ptype string, rules [][]string) error {
	for _, rule := range rules {
		p, err := casbinParams(ptype, rule)
		if err != nil {
			return err
		}
		if err := q.InsertRule(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func deleteCasbinRules(ctx context.Context, q *policydb.Queries, ptype string, rules [][]string) error {
	for _, rule := range rules {
		p, err := casbinParams(ptype, rule)
		if err != nil {
			return err
		}
		if err := q.DeleteRule(ctx, policydb.DeleteRuleParams(p)); err != nil {
			return err
		}
	}
	return nil
}

func deleteFilteredCasbinRules(ctx context.Context, q *policydb.Queries, ptype string, fieldIndex int, fieldValues []string) ([][]string, error) {
	if fieldIndex < 0 || fieldIndex+len(fieldValues) > 6 {
		return nil, fmt.Errorf("filter of %d values at %d does not fit v0..v5", len(fieldValues), fieldIndex)
	}
	var v [6]*string // nil leaves the column unconstrained
	for i, value := range fieldValues {
		if value != "" {
			v[fieldIndex+i] = &value
		}
	}
	rows, err := q.DeleteFilteredRules(ctx, policydb.DeleteFilteredRulesParams{
		Ptype: ptype, V0: v[0], V1: v[1], V2: v[2], V3: v[3], V4: v[4], V5: v[5],
	})
	if err != nil {
		return nil, err
	}
	old := make([][]string, len(rows))
	for i, r := range rows {
		old[i] = casbinRuleFromRow(r)
	}
	return old, nil
}

// casbinParams pads rule to v0..v5 and derives its tenant from its domain.
func casbinParams(ptype string, rule []string) (policydb.InsertRuleParams, error) {
	if len(rule) > 6 {
		return policydb.InsertRuleParams{}, fmt.Errorf("rule %v has %d values, casbin_rules holds 6", rule, len(rule))
	}
	var v [6]string
	copy(v[:], rule)
	domain := v[1] // p = sub, dom, obj, act
	if strings.HasPrefix(ptype, "g") {
		domain = v[2] // g = user, role, dom
	}
	var tenantID *uuid.UUID
	if id, err := uuid.Parse(domain); err == nil {
		tenantID = &id
	}
	return policydb.InsertRuleParams{
		TenantID: tenantID, Ptype: ptype, V0: v[0], V1: v[1], V2: v[2], V3: v[3], V4: v[4], V5: v[5],
	}, nil
}

// casbinRuleFromRow returns a row's values without the trailing empty
// columns that only padded a shorter rule, as Casbin stored it.
func casbinRuleFromRow(r policydb.CasbinRule) []string {
	v := []string{r.V0, r.V1, r.V2, r.V3, r.V4, r.V5}
	for len(v) > 0 && v[len(v)-1] == "" {
		v = v[:len(v)-1]
	}
	return v
}

// casbinError wraps err with op, turning a foreign key violation (the only
// one casbin_rules can raise: tenant_id names no tenant) into ErrUnknownTenant.
func casbinError(op string, err error) error {
	if err == nil {
		return nil
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23503" {
		err = ErrUnknownTenant
	}
	return fmt.Errorf("%s: %w", op, err)
}
