package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Webhook URLs and signatures: what a run may be delivered to, and the
// Stripe-like v1 HMAC scheme receivers verify.

// ValidateWebhookURL checks a webhook URL: absolute https, or http to a
// loopback host (localhost, 127.0.0.0/8, ::1) for development and tests;
// no user info; at most MaxWebhookURLBytes. Failures are *InvalidError on
// field "webhook_url".
func ValidateWebhookURL(raw string) error {
	bad := func(msg string) error { return &InvalidError{Field: "webhook_url", Message: msg} }
	if len(raw) > MaxWebhookURLBytes {
		return bad(fmt.Sprintf("must be at most %d bytes", MaxWebhookURLBytes))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return bad("must be an absolute URL such as https://example.com/hooks/agentplane")
	}
	if u.User != nil {
		return bad("must not hold credentials; authenticate deliveries by their signature")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopbackHost(u.Hostname()) {
			return bad("must use https (http only to localhost)")
		}
	default:
		return bad("must use https")
	}
	return nil
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// webhookFor is the URL a new run reports to: the request's, else the
// agent's default, else none.
func webhookFor(requested string, ag Agent) *string {
	if requested != "" {
		return &requested
	}
	return ag.WebhookURL
}

// redactWebhookURL drops a URL's query, which may carry a token, for audit.
func redactWebhookURL(u *string) any {
	if u == nil {
		return nil
	}
	if i := strings.IndexAny(*u, "?#"); i >= 0 {
		return (*u)[:i] + "?…"
	}
	return *u
}

// SignWebhook returns the X-Agentplane-Signature value of a delivery:
// "v1=" and the hex HMAC-SHA256, keyed by the secret's bytes, of the
// decimal unix timestamp (the X-Agentplane-Timestamp value), a ".", and the
// raw body. Receivers recompute it over the bytes they got, compare in
// constant time and reject old timestamps (VerifyWebhookSignature does all
// of that); the delivery id header tells retries of one delivery apart.
func SignWebhook(secret string, timestamp int64, body []byte) string {
	return "v1=" + hex.EncodeToString(webhookMAC(secret, strconv.FormatInt(timestamp, 10), body))
}

func webhookMAC(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyWebhookSignature checks a delivery as a receiver gets it: the
// X-Agentplane-Timestamp value, the raw body and the X-Agentplane-Signature
// header (comma-separated "v1=<hex>" entries; one matching is enough). The
// timestamp must be within tolerance of now (zero means
// DefaultWebhookTolerance, negative skips the check). Failures wrap
// ErrWebhookSignature or ErrWebhookTimestamp.
func VerifyWebhookSignature(secret, timestamp, body, header string, tolerance time.Duration) error {
	if secret == "" {
		return fmt.Errorf("%w: no secret to verify with", ErrWebhookSignature)
	}
	ts, ok := parseWebhookTimestamp(timestamp)
	if !ok {
		return fmt.Errorf("%w: %q is not a unix time in seconds", ErrWebhookTimestamp, timestamp)
	}
	if tolerance == 0 {
		tolerance = DefaultWebhookTolerance
	}
	if age := time.Since(time.Unix(ts, 0)); tolerance > 0 && (age > tolerance || age < -tolerance) {
		return fmt.Errorf("%w: signed %s ago, tolerance %s", ErrWebhookTimestamp, age.Round(time.Second), tolerance)
	}
	want := webhookMAC(secret, timestamp, []byte(body))
	for part := range strings.SplitSeq(header, ",") {
		sig, ok := strings.CutPrefix(strings.TrimSpace(part), "v1=")
		if !ok {
			continue
		}
		if got, err := hex.DecodeString(sig); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrWebhookSignature
}

func parseWebhookTimestamp(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
