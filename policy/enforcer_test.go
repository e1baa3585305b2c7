package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/policy"
)

// truthTable is the intended role × permission matrix. Changing grants.csv
// without changing this table fails the test, and so does the reverse.
var truthTable = map[policy.Permission][]policy.Role{
	policy.TenantCreate: {},
	policy.TenantList:   {},
	policy.TenantRead:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer},
	policy.TenantUpdate: {policy.RoleOwner, policy.RoleAdmin},
	policy.TenantDelete: {policy.RoleOwner},
	policy.MemberRead:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer},
	policy.MemberWrite:  {policy.RoleOwner, policy.RoleAdmin},
	policy.APIKeyRead:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.APIKeyWrite:  {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.AuditRead:    {policy.RoleOwner, policy.RoleAdmin},
	policy.PlatformOps:  {},
	policy.SecretRead:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.SecretWrite:  {policy.RoleOwner, policy.RoleAdmin},
	policy.ModelRead:    {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer},
	policy.ModelWrite:   {policy.RoleOwner, policy.RoleAdmin},
	policy.AgentRead:    {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer},
	policy.AgentWrite:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.ThreadRead:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer},
	policy.ThreadWrite:  {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.RunRead:      {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper, policy.RoleViewer},
	policy.RunWrite:     {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.PolicyRead:   {policy.RoleOwner, policy.RoleAdmin, policy.RoleDeveloper},
	policy.PolicyWrite:  {policy.RoleOwner, policy.RoleAdmin},
}

func TestRolePermissionTruthTable(t *testing.T) {
	t.Parallel()
	e, err := policy.NewEnforcer()
	require.NoError(t, err)
	require.Len(t, truthTable, len(policy.Permissions), "every permission needs a row")
	const tenant = "0193a5f0-0000-7000-8000-000000000001"
	for perm, allowed := range truthTable {
		for _, role := range policy.Roles {
			got, err := e.AllowedRole(role, tenant, perm)
			require.NoError(t, err)
			require.Equal(t, contains(allowed, role), got, "%s may %s", role, perm)
		}
		got, err := e.Allowed(policy.Principal{PlatformAdmin: true}, "", tenant, perm)
		require.NoError(t, err)
		require.True(t, got, "platform admin may %s", perm)
	}
}

func TestPlatformDomain(t *testing.T) {
	t.Parallel()
	e, err := policy.NewEnforcer()
	require.NoError(t, err)
	user := policy.Principal{Kind: policy.KindUser, ID: "u"}
	ok, err := e.Allowed(user, "", policy.DomainPlatform, policy.TenantList)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = e.Allowed(user, "", policy.DomainPlatform, policy.TenantCreate)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestUnknownRoleAndMalformedPermissionDeny(t *testing.T) {
	t.Parallel()
	e, err := policy.NewEnforcer()
	require.NoError(t, err)
	ok, err := e.AllowedRole("superuser", "t", policy.TenantRead)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = e.AllowedRole(policy.RoleOwner, "t", "nocolon")
	require.Error(t, err)
	require.False(t, ok)
}

// Every granted line must name a real permission (or a wildcard).
func TestGrantsNameKnownPermissions(t *testing.T) {
	t.Parallel()
	e, err := policy.NewEnforcer()
	require.NoError(t, err)
	grants, err := e.Grants()
	require.NoError(t, err)
	require.NotEmpty(t, grants)
	for _, g := range grants {
		if g[2] == "*" && g[3] == "*" {
			continue
		}
		require.True(t, policy.Permission(g[2]+":"+g[3]).Known(), "grant %v names an unknown permission", g)
	}
}

func contains(rs []policy.Role, r policy.Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
