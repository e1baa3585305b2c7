package tenants

import (
	"errors"
	"fmt"
)

// Sentinel errors; api/errors.go maps them to problem details.
var (
	ErrNotFound        = errors.New("not found")
	ErrConflict        = errors.New("conflict")
	ErrTenantSuspended = errors.New("tenant suspended")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
	ErrInvalidCursor   = errors.New("invalid cursor")
	ErrInvalidInput    = errors.New("invalid input")
)

// NotFoundError names what was not found, for a precise problem detail.
type NotFoundError struct{ Kind, Key string }

func (e *NotFoundError) Error() string        { return fmt.Sprintf("%s %q not found", e.Kind, e.Key) }
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ConflictError explains a conflict with a stable code (e.g. "slug_taken").
type ConflictError struct{ Code, Message string }

func (e *ConflictError) Error() string        { return e.Message }
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ForbiddenError explains a refusal that is not a plain missing permission.
type ForbiddenError struct{ Code, Message string }

func (e *ForbiddenError) Error() string        { return e.Message }
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// AuthError says why a credential was refused (malformed, unknown, expired,
// revoked); the code is stable, the message never echoes the credential.
type AuthError struct{ Code, Message string }

func (e *AuthError) Error() string        { return e.Message }
func (e *AuthError) Is(target error) bool { return target == ErrUnauthenticated }

// InvalidError reports one invalid input field (checks that need the
// database, such as "email already a member", are conflicts instead).
type InvalidError struct{ Field, Message string }

func (e *InvalidError) Error() string        { return e.Field + ": " + e.Message }
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidInput }
