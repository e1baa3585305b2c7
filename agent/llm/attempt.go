package llm

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// attempt makes one HTTP request and reads its stream. delivered reports
// whether onDelta saw any text, which forbids a retry.
func (c *Client) attempt(ctx context.Context, ep Endpoint, wire openai.ChatCompletionRequest, onDelta func(string)) (resp Response, delivered bool, err error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	rec := &recorder{hc: c.cfg.HTTPClient}
	defer rec.close()
	oc := openai.NewClientWithConfig(clientConfig(ep, rec))

	stream, err := oc.CreateChatCompletionStream(actx, wire)
	if err != nil {
		return Response{}, false, c.classify(ctx, actx, rec, err)
	}
	defer stream.Close()
	var acc assembler
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, acc.delivered, c.classify(ctx, actx, rec, err)
		}
		acc.add(chunk, onDelta)
	}
	switch {
	case acc.chunks == 0:
		return Response{}, false, &APIError{
			Status:  rec.status,
			Message: "response is not a chat-completion event stream",
			Body:    truncate(rec.body),
		}
	case acc.finish == "":
		return Response{}, acc.delivered, fmt.Errorf("%w: stream ended before a finish reason", ErrInterrupted)
	}
	return acc.response(), acc.delivered, nil
}

func clientConfig(ep Endpoint, doer openai.HTTPDoer) openai.ClientConfig {
	cfg := openai.DefaultConfig(ep.APIKey)
	cfg.BaseURL = ep.BaseURL
	cfg.HTTPClient = doer
	return cfg
}

// classify turns what go-openai returned into this package's errors,
// using the status, headers and body bytes the recorder saw.
func (c *Client) classify(ctx, actx context.Context, rec *recorder, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %s", ErrTimeout, c.cfg.Timeout)
	}
	if oe, ok := errors.AsType[*openai.APIError](err); ok {
		return rec.apiError(oe.HTTPStatusCode, oe.Code, oe.Type, oe.Message)
	}
	if re, ok := errors.AsType[*openai.RequestError](err); ok {
		e := rec.apiError(re.HTTPStatusCode, nil, "", "")
		e.Body = truncate(re.Body)
		return e
	}
	if rec.status == 0 {
		if _, ok := errors.AsType[*url.Error](err); !ok {
			return err // refused before sending, e.g. by go-openai's validation
		}
		if unreachable(err) {
			return fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return fmt.Errorf("%w: no response: %w", ErrInterrupted, err)
	}
	if malformed(err) {
		e := rec.apiError(rec.status, nil, "", "malformed event stream: "+err.Error())
		e.Retryable = false
		return e
	}
	return fmt.Errorf("%w: %w", ErrInterrupted, err)
}

// unreachable reports failures to reach the server at all: name
// resolution, connecting (refused, no route), TLS.
func unreachable(err error) bool {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	_, dns := errors.AsType[*net.DNSError](err)
	_, cert := errors.AsType[*tls.CertificateVerificationError](err)
	_, header := errors.AsType[tls.RecordHeaderError](err)
	_, alert := errors.AsType[tls.AlertError](err)
	return dns || cert || header || alert
}

func malformed(err error) bool {
	if errors.Is(err, openai.ErrTooManyEmptyStreamMessages) {
		return true
	}
	_, syntax := errors.AsType[*json.SyntaxError](err)
	_, typ := errors.AsType[*json.UnmarshalTypeError](err)
	return syntax || typ
}

// recorder is the HTTP doer of one attempt. It keeps the response status
// and headers and the first bytes of the body, which go-openai's errors
// do not carry.
type recorder struct {
	hc     *http.Client
	resp   *http.Response
	status int
	header http.Header
	body   []byte
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.hc.Do(req)
	if err != nil {
		return resp, err
	}
	r.resp, r.status, r.header = resp, resp.StatusCode, resp.Header
	resp.Body = &teeBody{ReadCloser: resp.Body, rec: r}
	return resp, nil
}

func (r *recorder) close() {
	if r.resp != nil {
		_ = r.resp.Body.Close()
	}
}

// apiError builds an APIError; status 0 (an error event inside a 200
// stream) takes the recorded status.
func (r *recorder) apiError(status int, code any, typ, msg string) *APIError {
	if status == 0 {
		status = r.status
	}
	e := &APIError{Status: status, Type: typ, Message: msg, Body: truncate(r.body)}
	if code != nil {
		e.Code = fmt.Sprint(code)
	}
	e.Retryable = retryableStatus(status) || (status < 300 && serverSide(e))
	if e.Retryable {
		e.RetryAfter = retryAfter(r.header, time.Now())
	}
	return e
}

// serverSide reports an error event inside a stream that blames the
// server rather than the request.
func serverSide(e *APIError) bool {
	switch e.Type {
	case "server_error", "overloaded_error", "api_error", "rate_limit_error":
		return true
	}
	return e.Code == "rate_limit_exceeded" || e.Code == "server_error"
}

// retryAfter reads retry-after-ms, then Retry-After as (fractional)
// seconds or an HTTP date; 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

type teeBody struct {
	io.ReadCloser
	rec *recorder
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if room := maxBody - len(t.rec.body); room > 0 && n > 0 {
		t.rec.body = append(t.rec.body, p[:min(n, room)]...)
	}
	return n, err
}
