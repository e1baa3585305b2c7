// Package pg owns the PostgreSQL plumbing every domain package shares: opening
// a pgx pool from a URL, creating the target database when it is missing, and
// running a unit of work in one transaction (WithTx).
//
// It has no product meaning and must never import a domain package. Its
// invariant: a WithTx closure either commits everything it wrote or nothing.
package pg
