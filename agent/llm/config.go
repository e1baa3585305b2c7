package llm

import (
	"errors"
	"net/http"
	"time"
)

// Config tunes a [Client]. The zero value is usable: [New] applies
// [Config.WithDefaults].
type Config struct {
	// MaxRetries bounds the retries after the first attempt; 0 means the
	// default (4) and a negative value disables retries.
	MaxRetries int
	// BaseBackoff is the backoff ceiling before the first retry; it doubles
	// per retry up to MaxBackoff, and the wait is drawn uniformly from
	// [0, ceiling] (full jitter). Default 500ms.
	BaseBackoff time.Duration
	// MaxBackoff caps the computed backoff. Default 20s. A Retry-After the
	// endpoint sends is honoured up to max(MaxBackoff, 60s).
	MaxBackoff time.Duration
	// Timeout bounds one attempt, from sending the request to the end of
	// its stream. Default 120s.
	Timeout time.Duration
	// HTTPClient sends the requests. Default: a client with its own pooled
	// transport (many idle connections per host) and no overall timeout.
	HTTPClient *http.Client
}

// Defaults.
const (
	DefaultMaxRetries  = 4
	DefaultBaseBackoff = 500 * time.Millisecond
	DefaultMaxBackoff  = 20 * time.Second
	DefaultTimeout     = 120 * time.Second

	// maxRetryAfter is the least cap on a server's Retry-After.
	maxRetryAfter = 60 * time.Second
)

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = DefaultBaseBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	return c
}

// Validate reports settings that cannot work together.
func (c Config) Validate() error {
	if c.BaseBackoff > 0 && c.MaxBackoff > 0 && c.BaseBackoff > c.MaxBackoff {
		return errors.New("llm: BaseBackoff exceeds MaxBackoff")
	}
	return nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 128
	return &http.Client{Transport: t}
}

// Client calls model endpoints. It is safe for concurrent use and holds no
// per-endpoint state, so one Client serves every tenant.
type Client struct {
	cfg Config
}

// New returns a Client; cfg's unset fields take their defaults.
func New(cfg Config) *Client {
	return &Client{cfg: cfg.WithDefaults()}
}
