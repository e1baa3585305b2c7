// Package api is the OpenAPI service: Huma operations on chi under /v1,
// authentication (API keys, the platform admin token), the one authorization
// middleware that enforces the permission each operation declares, the
// mapping from domain errors to RFC 9457 problem details, request ids,
// metrics, health, and the committed OpenAPI golden (openapi.yaml).
//
// It only translates between the wire and the domain services; it holds no
// business rules and never imports pgx. Invariants: every operation declares
// a permission; a tenant the caller has no standing in answers 404; errors
// never echo credentials.
package api
