// Package pgtest gives each test package its own freshly migrated PostgreSQL
// database, cloned from a template that is migrated once per schema version,
// and a transaction helper that rolls back when the test ends.
//
// Use it from TestMain (pgtest.Main) so the package's database is dropped
// when its tests finish. It only ever creates and drops databases whose names
// start with "agentplane_test_" or "agentplane_tmpl_".
package pgtest
