// Package audit owns each tenant's audit log: an append-only record of who
// changed what, hash-chained per tenant so that editing, deleting or
// truncating history is detectable by Verify.
//
// Chain: event n of a tenant stores prev_hash = hash of event n-1 (32 zero
// bytes for n = 1) and hash = SHA-256(prev_hash || canonical content), where
// the canonical content is a fixed JSON encoding of the event's columns (see
// canonical.go). The audit_heads row holds the latest seq and hash; Record
// locks it, so appends to one tenant are serialized while tenants proceed in
// parallel.
//
// Invariants and rules:
//   - Record appends only inside the caller's transaction, so an event exists
//     exactly when the change it describes was committed. The head lock is
//     held until that transaction ends: record late and keep it short. At
//     REPEATABLE READ or SERIALIZABLE a concurrent append fails with a
//     serialization error the caller must retry.
//   - The log never stores secret values. Callers must not put them in a
//     diff; as defence in depth Record replaces values under secret-looking
//     keys with "[redacted]" before hashing and storing.
//   - Rows are never updated or deleted by this package. Changing the
//     canonical encoding would invalidate every stored chain, so it is pinned
//     by a golden test.
//   - Every query is scoped by tenant id, except Verify's sweep over all
//     tenants.
package audit
