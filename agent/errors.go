package agent

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/tenants"
)

// The agent domain reports the same error kinds as tenants, so the API's
// one error table covers both.
type (
	NotFoundError  = tenants.NotFoundError
	ConflictError  = tenants.ConflictError
	InvalidError   = tenants.InvalidError
	ForbiddenError = tenants.ForbiddenError
)

var (
	ErrNotFound      = tenants.ErrNotFound
	ErrConflict      = tenants.ErrConflict
	ErrInvalidInput  = tenants.ErrInvalidInput
	ErrInvalidCursor = tenants.ErrInvalidCursor
	// ErrFenced means this worker no longer holds the run's lease.
	ErrFenced = errors.New("run lease lost")
)

// notFound translates pgx.ErrNoRows into a named not-found error.
func notFound(err error, kind, key string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return &NotFoundError{Kind: kind, Key: key}
	}
	return fmt.Errorf("%s %s: %w", kind, key, err)
}
