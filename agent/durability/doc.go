// Package durability holds the cross-process tests of the run machinery
// (DESIGN §5): a worker killed with SIGKILL between two model calls whose
// run a second worker finishes with no duplicated message and exactly one
// usage row per model call, and run events fanned out live from a worker in
// one process to a Server-Sent Events stream served by another process on
// the same database.
//
// It owns no product code. The test binary doubles as the child process:
// TestMain runs a River worker or an API server instead of the tests when
// AGENTPLANE_DURABILITY_CHILD names one, connected to the parent's test
// database.
//
// What it must never do: share memory between parent and child (everything
// crosses PostgreSQL and HTTP, as between replicas), create or drop
// databases in a child (only the parent's pgtest.Main owns the database),
// or leave a child behind: every child is stopped by its test's cleanup,
// and quits on its own when its stdin, held open by the parent, closes.
package durability
