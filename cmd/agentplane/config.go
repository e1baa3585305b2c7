package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// config is the process configuration: every field is an AGENTPLANE_*
// variable, mirrored by a flag of the same name in kebab case. The README's
// configuration table lists them; keep the two in step.
type config struct {
	DatabaseURL   string
	RedisURL      string
	HTTPAddr      string
	AdminToken    string
	MasterKey     string
	DataDir       string
	Role          string
	LogLevel      string
	LogFormat     string
	Workers       int
	KeyCacheTTL   time.Duration
	StopTimeout   time.Duration
	Migrate       bool
	Dev           bool
	SecureCookies bool
	// WebhookAllowPrivate lets run webhooks reach loopback and private
	// addresses (default: only in dev mode).
	WebhookAllowPrivate bool
	// Sandbox names the sandbox provider: bwrap, or host (dev mode only).
	Sandbox            string
	SandboxIdleTimeout time.Duration
	SandboxWallTime    time.Duration
	SandboxCPUTime     time.Duration
	SandboxMemory      int64
	SandboxOutput      int64
	SandboxProcs       int
	// redisSet records whether REDIS_URL was given (even empty = off).
	redisSet bool
}

const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/agentplane?sslmode=disable"

// envOr reads AGENTPLANE_<name>, falling back to def.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv("AGENTPLANE_" + name); ok {
		return v
	}
	return def
}

// parseConfig reads the environment, then lets flags override it.
func parseConfig(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.DatabaseURL, "database-url", envOr("DATABASE_URL", defaultDatabaseURL), "PostgreSQL URL (AGENTPLANE_DATABASE_URL)")
	_, c.redisSet = os.LookupEnv("AGENTPLANE_REDIS_URL")
	fs.StringVar(&c.RedisURL, "redis-url", envOr("REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis URL; empty turns Redis off (AGENTPLANE_REDIS_URL)")
	fs.StringVar(&c.HTTPAddr, "http-addr", envOr("HTTP_ADDR", "127.0.0.1:8080"), "HTTP listen address (AGENTPLANE_HTTP_ADDR)")
	fs.StringVar(&c.AdminToken, "admin-token", envOr("ADMIN_TOKEN", ""), "platform admin bearer token, at least 32 characters (AGENTPLANE_ADMIN_TOKEN)")
	// No environment default here, so --help never prints the key.
	fs.StringVar(&c.MasterKey, "master-key", "", "32 random bytes, base64, that wrap tenant secrets; prefer the variable, flags show in ps (AGENTPLANE_MASTER_KEY)")
	fs.StringVar(&c.DataDir, "data-dir", envOr("DATA_DIR", ".data"), "directory for local state (AGENTPLANE_DATA_DIR)")
	fs.StringVar(&c.Role, "role", envOr("ROLE", "all"), "api, worker or all (AGENTPLANE_ROLE)")
	fs.StringVar(&c.LogLevel, "log-level", envOr("LOG_LEVEL", "info"), "debug, info, warn or error (AGENTPLANE_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", envOr("LOG_FORMAT", "text"), "text or json (AGENTPLANE_LOG_FORMAT)")
	workers, err := strconv.Atoi(envOr("WORKERS", "20"))
	if err != nil {
		return c, fmt.Errorf("AGENTPLANE_WORKERS: %w", err)
	}
	fs.IntVar(&c.Workers, "workers", workers, "job worker concurrency (AGENTPLANE_WORKERS)")
	if c.KeyCacheTTL, err = time.ParseDuration(envOr("KEY_CACHE_TTL", "2s")); err != nil {
		return c, fmt.Errorf("AGENTPLANE_KEY_CACHE_TTL: %w", err)
	}
	fs.DurationVar(&c.KeyCacheTTL, "key-cache-ttl", c.KeyCacheTTL, "how long a verified API key is cached, at most 5s (AGENTPLANE_KEY_CACHE_TTL)")
	if c.StopTimeout, err = time.ParseDuration(envOr("STOP_TIMEOUT", "20s")); err != nil {
		return c, fmt.Errorf("AGENTPLANE_STOP_TIMEOUT: %w", err)
	}
	fs.DurationVar(&c.StopTimeout, "stop-timeout", c.StopTimeout, "graceful shutdown deadline (AGENTPLANE_STOP_TIMEOUT)")
	c.Migrate = envOr("MIGRATE", "true") != "false"
	fs.BoolVar(&c.Migrate, "migrate", c.Migrate, "apply migrations at start (AGENTPLANE_MIGRATE)")
	c.Dev = envOr("DEV", "false") == "true"
	fs.BoolVar(&c.Dev, "dev", c.Dev, "development mode: local database, demo tenant, printed credentials (AGENTPLANE_DEV)")
	if err := sandboxFlags(fs, &c); err != nil {
		return c, err
	}
	secure := envOr("SECURE_COOKIES", "")
	fs.StringVar(&secure, "secure-cookies", secure, "mark console cookies Secure (HTTPS only); default true except in dev mode (AGENTPLANE_SECURE_COOKIES)")
	allowPrivate := envOr("WEBHOOK_ALLOW_PRIVATE", "")
	fs.StringVar(&allowPrivate, "webhook-allow-private", allowPrivate, "let run webhooks reach loopback and private-network addresses; default true only in dev mode (AGENTPLANE_WEBHOOK_ALLOW_PRIVATE)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.MasterKey == "" {
		c.MasterKey = envOr("MASTER_KEY", "")
	}
	switch secure {
	case "":
		c.SecureCookies = !c.Dev
	case "true", "false":
		c.SecureCookies = secure == "true"
	default:
		return c, fmt.Errorf("AGENTPLANE_SECURE_COOKIES %q: must be true or false", secure)
	}
	switch allowPrivate {
	case "":
		c.WebhookAllowPrivate = c.Dev
	case "true", "false":
		c.WebhookAllowPrivate = allowPrivate == "true"
	default:
		return c, fmt.Errorf("AGENTPLANE_WEBHOOK_ALLOW_PRIVATE %q: must be true or false", allowPrivate)
	}
	return c, c.validate()
}

// validate fails fast, naming the variable at fault.
func (c config) validate() error {
	switch c.Role {
	case "api", "worker", "all":
	default:
		return fmt.Errorf("AGENTPLANE_ROLE %q: must be api, worker or all", c.Role)
	}
	if c.AdminToken != "" && len(c.AdminToken) < 32 {
		return fmt.Errorf("AGENTPLANE_ADMIN_TOKEN: must be at least 32 characters")
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return fmt.Errorf("AGENTPLANE_HTTP_ADDR %q: %w", c.HTTPAddr, err)
	}
	if c.KeyCacheTTL < 0 || c.KeyCacheTTL > 5*time.Second {
		return fmt.Errorf("AGENTPLANE_KEY_CACHE_TTL %s: must be between 0s and 5s", c.KeyCacheTTL)
	}
	if c.Workers < 1 {
		return fmt.Errorf("AGENTPLANE_WORKERS %d: must be at least 1", c.Workers)
	}
	if _, err := c.level(); err != nil {
		return err
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("AGENTPLANE_LOG_FORMAT %q: must be text or json", c.LogFormat)
	}
	return c.validateSandbox()
}

// sandboxFlags reads the AGENTPLANE_SANDBOX* variables and their flags.
func sandboxFlags(fs *flag.FlagSet, c *config) error {
	fs.StringVar(&c.Sandbox, "sandbox", envOr("SANDBOX", "bwrap"), "sandbox provider: bwrap, or host in dev mode only (AGENTPLANE_SANDBOX)")
	durations := []struct {
		dst        *time.Duration
		name, def  string
		flag, help string
	}{
		{&c.SandboxIdleTimeout, "SANDBOX_IDLE_TIMEOUT", "30m", "sandbox-idle-timeout", "destroy a thread's sandbox after this long unused"},
		{&c.SandboxWallTime, "SANDBOX_WALL_TIME", "120s", "sandbox-wall-time", "wall-clock limit of one sandbox command"},
		{&c.SandboxCPUTime, "SANDBOX_CPU", "60s", "sandbox-cpu", "CPU-time limit of one sandbox command"},
	}
	for _, d := range durations {
		v, err := time.ParseDuration(envOr(d.name, d.def))
		if err != nil {
			return fmt.Errorf("AGENTPLANE_%s: %w", d.name, err)
		}
		fs.DurationVar(d.dst, d.flag, v, d.help+" (AGENTPLANE_"+d.name+")")
	}
	sizes := []struct {
		dst        *int64
		name, def  string
		flag, help string
	}{
		{&c.SandboxMemory, "SANDBOX_MEMORY", "1GiB", "sandbox-memory", "memory limit of one sandbox command, bytes or with KiB/MiB/GiB"},
		{&c.SandboxOutput, "SANDBOX_OUTPUT", "1MiB", "sandbox-output", "output kept of one sandbox command (more kills it), bytes or with KiB/MiB/GiB"},
	}
	for _, sz := range sizes {
		v, err := parseBytes(envOr(sz.name, sz.def))
		if err != nil {
			return fmt.Errorf("AGENTPLANE_%s: %w", sz.name, err)
		}
		*sz.dst = v
		fs.Func(sz.flag, sz.help+" (AGENTPLANE_"+sz.name+")", func(s string) error {
			n, err := parseBytes(s)
			if err != nil {
				return fmt.Errorf("AGENTPLANE_%s: %w", sz.name, err)
			}
			*sz.dst = n
			return nil
		})
	}
	procs, err := strconv.Atoi(envOr("SANDBOX_PROCS", "256"))
	if err != nil {
		return fmt.Errorf("AGENTPLANE_SANDBOX_PROCS: %w", err)
	}
	fs.IntVar(&c.SandboxProcs, "sandbox-procs", procs, "process limit of one sandbox command (AGENTPLANE_SANDBOX_PROCS)")
	return nil
}

func (c config) validateSandbox() error {
	switch {
	case c.Sandbox == "host" && !c.Dev:
		return fmt.Errorf("AGENTPLANE_SANDBOX %q: the host provider isolates nothing and is allowed only in dev mode", c.Sandbox)
	case c.Sandbox != "bwrap" && c.Sandbox != "host":
		return fmt.Errorf("AGENTPLANE_SANDBOX %q: must be bwrap or host", c.Sandbox)
	case c.SandboxIdleTimeout < time.Second:
		return fmt.Errorf("AGENTPLANE_SANDBOX_IDLE_TIMEOUT %s: must be at least 1s", c.SandboxIdleTimeout)
	case c.SandboxWallTime < time.Second:
		return fmt.Errorf("AGENTPLANE_SANDBOX_WALL_TIME %s: must be at least 1s", c.SandboxWallTime)
	case c.SandboxCPUTime < time.Second:
		return fmt.Errorf("AGENTPLANE_SANDBOX_CPU %s: must be at least 1s", c.SandboxCPUTime)
	case c.SandboxMemory < 16<<20:
		return fmt.Errorf("AGENTPLANE_SANDBOX_MEMORY %d: must be at least 16MiB", c.SandboxMemory)
	case c.SandboxOutput < 1<<10:
		return fmt.Errorf("AGENTPLANE_SANDBOX_OUTPUT %d: must be at least 1KiB", c.SandboxOutput)
	case c.SandboxProcs < 8:
		return fmt.Errorf("AGENTPLANE_SANDBOX_PROCS %d: must be at least 8", c.SandboxProcs)
	}
	return nil
}

// parseBytes reads a size: plain bytes or a number with KiB, MiB or GiB.
func parseBytes(s string) (int64, error) {
	num, mult := s, int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			num, mult = n, m
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want bytes, or a whole number with KiB, MiB or GiB", s)
	}
	return n * mult, nil
}

func (c config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(c.LogLevel))); err != nil {
		return l, fmt.Errorf("AGENTPLANE_LOG_LEVEL %q: must be debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}

func (c config) logger() *slog.Logger {
	l, _ := c.level()
	opts := &slog.HandlerOptions{Level: l}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// randomToken makes a dev admin token.
func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := randRead(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
