package audit

import "errors"

var (
	// ErrInvalidCursor means a List cursor was not one this package issued.
	ErrInvalidCursor = errors.New("invalid audit cursor")
	// ErrInvalidEvent means an Event lacks a field the log requires, or its
	// diff cannot be encoded.
	ErrInvalidEvent = errors.New("invalid audit event")
)
