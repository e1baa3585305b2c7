package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/internal/requestid"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
)

// problemFor is the one table from domain errors to problem details. An
// error it does not know is an internal error: logged, never shown.
func problemFor(ctx context.Context, logger *slog.Logger, err error) *Problem {
	var (
		nf   *tenants.NotFoundError
		cf   *tenants.ConflictError
		fb   *tenants.ForbiddenError
		ae   *tenants.AuthError
		inv  *tenants.InvalidError
		prob *Problem
		big  *agent.TooLargeError
	)
	switch {
	case errors.As(err, &prob):
		return prob
	case errors.As(err, &nf):
		return newProblem(http.StatusNotFound, strings.ReplaceAll(nf.Kind, " ", "_")+"_not_found", nf.Error())
	case errors.As(err, &cf):
		return newProblem(http.StatusConflict, cf.Code, cf.Message)
	case errors.As(err, &fb):
		return newProblem(http.StatusForbidden, fb.Code, fb.Message)
	case errors.As(err, &ae):
		return newProblem(http.StatusUnauthorized, ae.Code, ae.Message)
	case errors.As(err, &big):
		p := newProblem(http.StatusRequestEntityTooLarge, "input_too_large", big.Error())
		p.Errors = []*huma.ErrorDetail{{Message: big.Error(), Location: "body." + big.Field}}
		return p
	case errors.Is(err, tenants.ErrTenantSuspended):
		return newProblem(http.StatusForbidden, "tenant_suspended", "the tenant is suspended")
	case errors.As(err, &inv):
		p := newProblem(http.StatusUnprocessableEntity, "validation_failed", "validation failed")
		p.Errors = []*huma.ErrorDetail{{Message: inv.Message, Location: "body." + inv.Field}}
		return p
	case errors.Is(err, tenants.ErrInvalidCursor), errors.Is(err, audit.ErrInvalidCursor):
		p := newProblem(http.StatusUnprocessableEntity, "invalid_cursor", "the cursor is not one this API issued")
		p.Errors = []*huma.ErrorDetail{{Message: "invalid cursor", Location: "query.cursor"}}
		return p
	case errors.Is(err, context.Canceled):
		return newProblem(499, "client_closed_request", "the client went away")
	}
	logger.ErrorContext(ctx, "internal error", slog.String("error", err.Error()))
	return newProblem(http.StatusInternalServerError, "internal", "internal error; quote the request id when reporting it")
}

// fail converts a domain error for a handler's return, naming the request.
func (s *Server) fail(ctx context.Context, err error) error {
	p := problemFor(ctx, s.logger, err)
	p.RequestID = requestid.From(ctx)
	if path, ok := ctx.Value(pathKey{}).(string); ok {
		p.Instance = path
	}
	return p
}
