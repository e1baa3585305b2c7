package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agentplane/agentplane/internal/requestid"
)

// Problem is an RFC 9457 problem detail with a stable machine-readable code.
type Problem struct {
	Type      string              `json:"type,omitempty" doc:"A URI reference identifying the problem type." example:"about:blank"`
	Title     string              `json:"title" doc:"Short summary of the problem type." example:"Not Found"`
	Status    int                 `json:"status" doc:"HTTP status code." example:"404"`
	Code      string              `json:"code" doc:"Stable machine-readable error code." example:"tenant_not_found"`
	Detail    string              `json:"detail,omitempty" doc:"Explanation specific to this occurrence." example:"tenant \"acme\" not found"`
	Instance  string              `json:"instance,omitempty" doc:"The request path." example:"/v1/tenants/acme"`
	RequestID string              `json:"request_id,omitempty" doc:"The request id, also in the X-Request-Id header." example:"9f1c2b7a5e3d4c10"`
	Errors    []*huma.ErrorDetail `json:"errors,omitempty" doc:"Every invalid field, for validation errors."`

	retryAfter int
}

func (p *Problem) Error() string  { return p.Detail }
func (p *Problem) GetStatus() int { return p.Status }

// ContentType makes JSON problems use the RFC 9457 media type.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// GetHeaders lets a 429 carry Retry-After.
func (p *Problem) GetHeaders() http.Header {
	if p.retryAfter <= 0 {
		return nil
	}
	return http.Header{"Retry-After": {strconv.Itoa(p.retryAfter)}}
}

// defaultCodes gives every status a stable code when no domain error names one.
var defaultCodes = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusUnauthorized:          "unauthenticated",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusNotAcceptable:         "not_acceptable",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "body_too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
	http.StatusUnprocessableEntity:   "validation_failed",
	http.StatusTooManyRequests:       "rate_limited",
	http.StatusInternalServerError:   "internal",
	http.StatusServiceUnavailable:    "unavailable",
}

func newProblem(status int, code, detail string) *Problem {
	if code == "" {
		code = defaultCodes[status]
		if code == "" {
			code = "error"
		}
	}
	return &Problem{Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

var installErrors sync.Once

// useProblems makes Huma build every error it raises itself (validation,
// body too large, unknown content type) as a Problem, so all errors share
// one shape. Huma exposes this only as package variables.
func useProblems() {
	installErrors.Do(func() {
		huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
			p := newProblem(status, "", msg)
			for _, e := range errs {
				if e == nil {
					continue
				}
				if d, ok := e.(huma.ErrorDetailer); ok {
					p.Errors = append(p.Errors, redactValue(d.ErrorDetail()))
				} else {
					p.Errors = append(p.Errors, &huma.ErrorDetail{Message: e.Error()})
				}
			}
			if status == http.StatusUnsupportedMediaType {
				// Huma's 415 detail quotes the raw body, which may hold secrets.
				p.Detail = "unsupported content type; send application/json"
				p.Errors = nil
			}
			return p
		}
		huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
			p := huma.NewError(status, msg, errs...)
			if pp, ok := p.(*Problem); ok && ctx != nil {
				pp.RequestID = requestid.From(ctx.Context())
				pp.Instance = ctx.URL().Path
			}
			return p
		}
	})
}

// writeProblem writes p directly (for middleware, which has no handler return).
func writeProblem(ctx huma.Context, p *Problem) {
	p.RequestID = requestid.From(ctx.Context())
	p.Instance = ctx.URL().Path
	ctx.SetHeader("Content-Type", "application/problem+json")
	for k, v := range p.GetHeaders() {
		ctx.SetHeader(k, v[0])
	}
	ctx.SetStatus(p.Status)
	_ = json.NewEncoder(ctx.BodyWriter()).Encode(p)
}

// writeHTTPProblem is writeProblem for plain net/http handlers.
func writeHTTPProblem(ctx context.Context, w http.ResponseWriter, r *http.Request, p *Problem) {
	p.RequestID = requestid.From(ctx)
	p.Instance = r.URL.Path
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// sensitiveRE matches field locations whose rejected values must not be
// echoed back (write-only credentials).
var sensitiveRE = regexp.MustCompile(`(?i)(password|secret|token|key$|value$)`)

func redactValue(d *huma.ErrorDetail) *huma.ErrorDetail {
	if d != nil && sensitiveRE.MatchString(d.Location) {
		d.Value = nil
	}
	return d
}
