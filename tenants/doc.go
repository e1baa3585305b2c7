// Package tenants owns tenants, users, memberships, API keys and console
// sessions: who exists, who belongs where with which role, and how a caller
// proves who it is. Later it also owns quotas and the usage ledger.
//
// Every mutating use case runs in one transaction that also appends its
// audit event (tenants/audit). Invariants: every query on a tenant row takes
// the tenant id; secrets (passwords, API key secrets, session tokens) are
// stored only as hashes and never leave a method that created them except
// once, in its return value; a tenant always keeps at least one owner once it
// has one; nobody grants a role above their own.
package tenants
