// Package bench holds the end-to-end benchmarks that compare a path through
// the whole product against a baseline measured in the same run on the same
// database, reporting both and their ratio. Run them with `make bench`.
//
// It has no production code; benchmarks never assert on timings.
package bench
