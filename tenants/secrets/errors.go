package secrets

import "errors"

// Sentinel errors. Not-found and invalid-input failures are the tenants
// package's typed errors (*tenants.NotFoundError with Kind "secret",
// *tenants.InvalidError), so transports map them like any other domain.
var (
	// ErrWrongMasterKey means a tenant's data key did not unwrap: the
	// process runs with another master key than the one that wrapped it
	// (or the stored key was altered).
	ErrWrongMasterKey = errors.New("secrets: data key does not unwrap with this master key")
	// ErrUnreadable means a stored value did not open under its tenant's
	// data key: the row was altered or copied from another name, version or
	// tenant.
	ErrUnreadable = errors.New("secrets: stored value does not open")
)
