package policy_test

import (
	"testing"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/policy"
)

// adapterModel is plain RBAC with domains, independent of the product model,
// so these tests exercise storage rather than the shipped grants.
const adapterModel = `
[request_definition]
r = sub, dom, obj, act
[policy_definition]
p = sub, dom, obj, act
[role_definition]
g = _, _, _
[policy_effect]
e = some(where (p.eft == allow))
[matchers]
m = g(r.sub, p.sub, r.dom) && r.dom == p.dom && r.obj == p.obj && r.act == p.act
`

// adapterTenant inserts a tenant and returns its id, which is a tenant domain.
func adapterTenant(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(t.Context(), `INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3)`, id, "t-"+id.String(), "Test "+id.String())
	require.NoError(t, err)
	return id.String()
}

// adapterPlatformDomain is a unique domain that is not a UUID, so its rules
// are platform-wide (tenant_id NULL) yet private to one test.
func adapterPlatformDomain() string { return "platform-" + uuid.NewString()[:8] }

// adapterEnforcer loads an enforcer through a, all rules or a filtered set.
func adapterEnforcer(t *testing.T, a *policy.Adapter, filter *policy.TenantFilter) *casbin.Enforcer {
	t.Helper()
	m, err := model.NewModelFromString(adapterModel)
	require.NoError(t, err)
	e, err := casbin.NewEnforcer(m, a)
	require.NoError(t, err)
	if filter != nil {
		require.NoError(t, e.LoadFilteredPolicy(*filter))
	}
	return e
}

func adapterAllowed(t *testing.T, e *casbin.Enforcer, sub, dom, obj, act string) bool {
	t.Helper()
	ok, err := e.Enforce(sub, dom, obj, act)
	require.NoError(t, err)
	return ok
}

// adapterFresh reloads the domain's "p" rules through a new enforcer, proving
// they came from the database and not from an enforcer's memory.
func adapterFresh(t *testing.T, pool *pgxpool.Pool, dom string) [][]string {
	t.Helper()
	rules, err := adapterEnforcer(t, policy.NewAdapter(pool), nil).GetFilteredPolicy(1, dom)
	require.NoError(t, err)
	return rules
}

func TestAdapterRoundTrip(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant, platform := adapterTenant(t, pool), adapterPlatformDomain()

	e := adapterEnforcer(t, policy.NewAdapter(pool), nil)
	_, err := e.AddPolicies([][]string{{"admin", tenant, "doc", "read"}, {"admin", platform, "doc", "read"}})
	require.NoError(t, err)
	_, err = e.AddGroupingPolicy("alice", "admin", tenant)
	require.NoError(t, err)

	fresh := adapterEnforcer(t, policy.NewAdapter(pool), nil)
	require.True(t, adapterAllowed(t, fresh, "alice", tenant, "doc", "read"))
	require.False(t, adapterAllowed(t, fresh, "alice", tenant, "doc", "write"))
	require.False(t, adapterAllowed(t, fresh, "bob", tenant, "doc", "read"))

	// The domain picks tenant_id: v1 for "p", v2 for "g", NULL when not a UUID.
	var p, g, plat *uuid.UUID
	row := pool.QueryRow(t.Context(), `SELECT
		(SELECT tenant_id FROM casbin_rules WHERE ptype = 'p' AND v1 = $1),
		(SELECT tenant_id FROM casbin_rules WHERE ptype = 'g' AND v2 = $1),
		(SELECT tenant_id FROM casbin_rules WHERE ptype = 'p' AND v1 = $2)`, tenant, platform)
	require.NoError(t, row.Scan(&p, &g, &plat))
	require.NotNil(t, p)
	require.Equal(t, tenant, p.String())
	require.NotNil(t, g)
	require.Equal(t, tenant, g.String())
	require.Nil(t, plat)
}

func TestAdapterRemove(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant := adapterTenant(t, pool)
	a := policy.NewAdapter(pool)
	e := adapterEnforcer(t, a, nil)
	_, err := e.AddPolicies([][]string{{"admin", tenant, "doc", "read"}, {"admin", tenant, "doc", "write"}})
	require.NoError(t, err)

	_, err = e.RemovePolicy("admin", tenant, "doc", "write")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"admin", tenant, "doc", "read"}}, adapterFresh(t, pool, tenant))

	// Removing a rule that is not stored is a no-op.
	require.NoError(t, a.RemovePolicy("p", "p", []string{"admin", tenant, "doc", "write"}))
}

func TestAdapterRemoveFiltered(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant, other := adapterTenant(t, pool), adapterTenant(t, pool)
	e := adapterEnforcer(t, policy.NewAdapter(pool), nil)
	_, err := e.AddPolicies([][]string{
		{"admin", tenant, "doc", "read"}, {"admin", tenant, "doc", "write"},
		{"viewer", tenant, "doc", "read"}, {"admin", other, "doc", "write"},
	})
	require.NoError(t, err)

	// An empty value matches any: every "write" rule in tenant, whoever holds it.
	_, err = e.RemoveFilteredPolicy(1, tenant, "", "write")
	require.NoError(t, err)
	require.ElementsMatch(t, [][]string{{"admin", tenant, "doc", "read"}, {"viewer", tenant, "doc", "read"}}, adapterFresh(t, pool, tenant))
	require.Equal(t, [][]string{{"admin", other, "doc", "write"}}, adapterFresh(t, pool, other))

	_, err = e.RemoveFilteredPolicy(0, "admin", tenant)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"viewer", tenant, "doc", "read"}}, adapterFresh(t, pool, tenant))
}

func TestAdapterBatchAndUpdate(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant := adapterTenant(t, pool)
	e := adapterEnforcer(t, policy.NewAdapter(pool), nil)
	rules := [][]string{{"a", tenant, "doc", "read"}, {"b", tenant, "doc", "read"}, {"c", tenant, "doc", "read"}}
	_, err := e.AddPolicies(rules)
	require.NoError(t, err)
	require.ElementsMatch(t, rules, adapterFresh(t, pool, tenant))

	_, err = e.RemovePolicies(rules[:2])
	require.NoError(t, err)
	require.Equal(t, rules[2:], adapterFresh(t, pool, tenant))

	_, err = e.UpdatePolicy(rules[2], []string{"c", tenant, "doc", "write"})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"c", tenant, "doc", "write"}}, adapterFresh(t, pool, tenant))

	_, err = e.UpdateFilteredPolicies([][]string{{"d", tenant, "doc", "read"}}, 0, "c", tenant)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"d", tenant, "doc", "read"}}, adapterFresh(t, pool, tenant))
}

func TestAdapterDuplicateAddIsNoop(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant := adapterTenant(t, pool)
	a := policy.NewAdapter(pool)
	rule := []string{"admin", tenant, "doc", "read"}

	// The enforcer skips duplicates itself; the adapter must also accept
	// them, because another replica may have stored the rule already.
	require.NoError(t, a.AddPolicy("p", "p", rule))
	require.NoError(t, a.AddPolicy("p", "p", rule))
	require.NoError(t, a.AddPolicies("p", "p", [][]string{rule, {"admin", tenant, "doc", "write"}}))

	var n int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM casbin_rules WHERE v1 = $1`, tenant).Scan(&n))
	require.Equal(t, 2, n)
}

func TestAdapterTenantRuleRequiresTenant(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant, missing := adapterTenant(t, pool), uuid.NewString()
	a := policy.NewAdapter(pool)

	err := a.AddPolicy("p", "p", []string{"admin", missing, "doc", "read"})
	require.ErrorIs(t, err, policy.ErrUnknownTenant)
	err = a.AddPolicy("g", "g", []string{"alice", "admin", missing})
	require.ErrorIs(t, err, policy.ErrUnknownTenant)

	// A batch is all or none: the valid rule is not stored either.
	err = a.AddPolicies("p", "p", [][]string{{"admin", tenant, "doc", "read"}, {"admin", missing, "doc", "read"}})
	require.ErrorIs(t, err, policy.ErrUnknownTenant)
	require.Empty(t, adapterFresh(t, pool, tenant))
}

func TestAdapterFilteredLoad(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	tenant, other, platform := adapterTenant(t, pool), adapterTenant(t, pool), adapterPlatformDomain()
	a := policy.NewAdapter(pool)
	require.NoError(t, a.AddPolicies("p", "p", [][]string{
		{"admin", tenant, "doc", "read"}, {"admin", other, "doc", "read"}, {"admin", platform, "doc", "read"},
	}))
	require.NoError(t, a.AddPolicies("g", "g", [][]string{
		{"alice", "admin", tenant}, {"bob", "admin", other}, {"carol", "admin", platform},
	}))

	e := adapterEnforcer(t, a, &policy.TenantFilter{TenantID: uuid.MustParse(tenant)})
	require.True(t, e.IsFiltered())
	require.True(t, adapterAllowed(t, e, "alice", tenant, "doc", "read"))
	require.True(t, adapterAllowed(t, e, "carol", platform, "doc", "read"))
	require.False(t, adapterAllowed(t, e, "bob", other, "doc", "read"))

	// Other tests add rules concurrently, so check what every loaded rule is
	// rather than the exact set: this tenant's, or platform-wide.
	p, err := e.GetPolicy()
	require.NoError(t, err)
	g, err := e.GetGroupingPolicy()
	require.NoError(t, err)
	for _, dom := range append(adapterColumn(p, 1), adapterColumn(g, 2)...) {
		if _, err := uuid.Parse(dom); err == nil {
			require.Equal(t, tenant, dom)
		}
	}

	// Saving a filtered policy would erase every other tenant's rules.
	require.Error(t, e.SavePolicy())

	onlyPlatform := adapterEnforcer(t, a, &policy.TenantFilter{})
	require.True(t, adapterAllowed(t, onlyPlatform, "carol", platform, "doc", "read"))
	require.False(t, adapterAllowed(t, onlyPlatform, "alice", tenant, "doc", "read"))

	require.Error(t, a.LoadFilteredPolicy(model.Model{}, "not a filter"))
}

func adapterColumn(rules [][]string, i int) []string {
	out := make([]string, len(rules))
	for n, r := range rules {
		out[n] = r[i]
	}
	return out
}

// TestAdapterSavePolicyReplaces is deliberately not parallel: SavePolicy
// deletes every row of casbin_rules, and sequential tests finish before any
// parallel test in the package starts, so it cannot erase their rules.
func TestAdapterSavePolicyReplaces(t *testing.T) {
	pool := pgtest.Pool(t)
	tenant := adapterTenant(t, pool)
	a := policy.NewAdapter(pool)
	require.NoError(t, a.AddPolicy("p", "p", []string{"old", tenant, "doc", "read"}))

	m, err := model.NewModelFromString(adapterModel)
	require.NoError(t, err)
	e, err := casbin.NewEnforcer(m) // empty in memory; the stored rule is not loaded
	require.NoError(t, err)
	_, err = e.AddPolicy("new", tenant, "doc", "read")
	require.NoError(t, err)
	_, err = e.AddGroupingPolicy("alice", "new", tenant)
	require.NoError(t, err)
	e.SetAdapter(a)
	require.NoError(t, e.SavePolicy())

	fresh := adapterEnforcer(t, policy.NewAdapter(pool), nil)
	p, err := fresh.GetPolicy()
	require.NoError(t, err)
	require.Equal(t, [][]string{{"new", tenant, "doc", "read"}}, p)
	g, err := fresh.GetGroupingPolicy()
	require.NoError(t, err)
	require.Equal(t, [][]string{{"alice", "new", tenant}}, g)
}
