// Package sandbox owns where agents' side effects happen: the provider seam
// (acquire a sandbox for a tenant's thread, exec commands, file operations,
// release to a warm pool, destroy), the providers (bubblewrap namespaces by
// default; a host provider for development only), the environment policy
// that builds every command's environment from scratch, the mapping of
// virtual paths (/mnt/user-data/..., /mnt/skills) onto a thread's tree,
// per-path write locks, and sandbox ownership leases.
//
// Invariants: a command never inherits the server's environment; a virtual
// path never resolves outside the thread's tree; /mnt/skills is never
// writable; one thread's sandbox never sees another thread's files; a
// command never runs as root, and (bubblewrap) nothing it starts outlives
// it.
package sandbox
