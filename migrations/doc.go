// Package migrations owns the database schema: our numbered goose migrations
// (embedded SQL files in this folder) and River's tables (rivermigrate, at a
// pinned version), applied together under one advisory lock.
//
// Migrations are forward-only in production; a file once released is never
// edited. Apply is safe to call from several replicas starting at once.
package migrations
