// Package jobs owns the River runtime: the client, its queues, the explicit
// list of every worker in the product, periodic jobs, the job middleware
// (logging with job and tenant attributes) and the River UI handler.
//
// Domain packages own their job args and workers; this package only
// registers them. It must not hold business rules. Invariant: a worker is
// registered here or it does not run — there is no init() registration.
package jobs
