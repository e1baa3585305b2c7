// Package policy owns who may do what: principals (users, API keys, the
// platform admin), tenant roles, the permissions every API operation declares,
// and the Casbin enforcer (RBAC with tenants as domains, deny overrides) that
// decides them. Capability gates for tools, models, skills and MCP servers
// plug into the same enforcer through tenant-editable rules stored by the pgx
// adapter in this package.
//
// It must never import a domain package. Invariants: deny by default; an
// evaluation error is a denial; a principal's role is only ever resolved for
// one tenant at a time.
package policy
