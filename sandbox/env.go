package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ErrEnvRefused is returned for an ExecRequest.Env name that is not a valid
// variable name or that would change how the sandbox itself works (PATH,
// HOME, TMPDIR, dynamic-loader and shell start-up variables).
var ErrEnvRefused = errors.New("environment variable refused")

// baseEnv is every command's starting environment. Nothing else from the
// server's environment reaches a command unless EnvPolicy.Passthrough names
// it.
var baseEnv = [][2]string{
	{"PATH", "/usr/local/bin:/usr/bin:/bin"},
	{"HOME", Workspace},
	{"LANG", "C.UTF-8"},
	{"TMPDIR", "/tmp"},
	{"TERM", "dumb"},
}

// EnvPolicy builds a command's environment from scratch, in three layers:
//
//  1. the fixed base (PATH, HOME, LANG, TMPDIR, TERM);
//  2. Passthrough: server variables an operator chose to forward (a proxy
//     setting, say). This is the only inherited channel, and it is the one
//     that is scrubbed: a name that looks like a secret or a connection
//     string (SecretName) is dropped even when configured;
//  3. ExecRequest.Env: the explicit per-call channel for the values skill
//     policy binds to this command. Secrets are its purpose, so its names
//     are not scrubbed; they are only checked to be valid names that do not
//     replace the base's PATH/HOME/TMPDIR or inject loader or shell hooks.
//
// The server's own environment (DATABASE_URL, provider API keys,
// AGENTPLANE_*) therefore never reaches a command: it is neither the base
// nor inherited, and cannot be forwarded by Passthrough.
type EnvPolicy struct {
	// Passthrough names server environment variables copied into every
	// command when set; secret-looking names are ignored.
	Passthrough []string
	// Lookup reads the server environment; nil means os.LookupEnv.
	Lookup func(string) (string, bool)
}

// Build returns the environment for one command as KEY=VALUE pairs, sorted
// by name. home, when not empty, replaces the base HOME (the host provider
// has no /mnt/user-data).
func (p EnvPolicy) Build(perCall map[string]string, home string) ([]string, error) {
	env := make(map[string]string, len(baseEnv)+len(p.Passthrough)+len(perCall))
	for _, kv := range baseEnv {
		env[kv[0]] = kv[1]
	}
	if home != "" {
		env["HOME"] = home
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, name := range p.Passthrough {
		if !validEnvName(name) || SecretName(name) || reservedEnvName(name) {
			continue
		}
		if v, ok := lookup(name); ok {
			env[name] = v
		}
	}
	for name, v := range perCall {
		if !validEnvName(name) || reservedEnvName(name) || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env %q: %w", name, ErrEnvRefused)
		}
		env[name] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// secretFragments mark a name as holding a secret wherever they appear.
var secretFragments = []string{
	"KEY", "SECRET", "TOKEN", "PASS", "CREDENTIAL", "DSN", "AUTH",
	"COOKIE", "SESSION", "PRIVATE",
}

// secretPrefixes mark connection settings of common data stores and
// cloud SDKs (PGHOST, PGPASSWORD, POSTGRES_*, MYSQL_*, AWS_*, ...).
var secretPrefixes = []string{
	"AGENTPLANE_", "PG", "POSTGRES", "MYSQL_", "MARIADB_", "MONGO", "REDIS",
	"AMQP", "RABBITMQ_", "KAFKA_", "NATS_", "AWS_", "AZURE_", "GCP_", "GOOGLE_",
	"DOCKER_", "KUBE", "VAULT_", "CLICKHOUSE_", "ELASTIC", "MEMCACHE", "SENTRY_",
	"SSH_", "GPG_", "GNUPG", "NETRC",
}

// secretURLWords mark a *_URL/*_URI/*_ADDR name as a connection string
// (DATABASE_URL, CACHE_DB_URI, BROKER_ADDR, ...).
var secretURLWords = []string{
	"DATABASE", "DB", "SQL", "CACHE", "QUEUE", "BROKER", "STORE", "BUCKET", "S3",
	"SMTP", "MAIL", "WEBHOOK", "CONN",
}

// SecretName reports whether an environment variable name looks like it
// holds a secret or a connection string; such names are never forwarded
// from the server's environment. Matching is case-insensitive.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, f := range secretFragments {
		if strings.Contains(n, f) {
			return true
		}
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	if strings.HasSuffix(n, "_URL") || strings.HasSuffix(n, "_URI") || strings.HasSuffix(n, "_ADDR") {
		for _, w := range secretURLWords {
			if strings.Contains(n, w) {
				return true
			}
		}
	}
	return false
}

// reservedEnvName reports names a caller may not set: the base's
// PATH/HOME/TMPDIR, and hooks that run code before the command does.
func reservedEnvName(name string) bool {
	n := strings.ToUpper(name)
	switch n {
	case "PATH", "HOME", "TMPDIR", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "IFS", "PS4", "PROMPT_COMMAND":
		return true
	}
	return strings.HasPrefix(n, "LD_") || strings.HasPrefix(n, "BASH_FUNC_") || strings.HasPrefix(n, "GCONV_")
}

// validEnvName accepts POSIX portable names: [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// shell is the interpreter for commands: bash, as the tool's name promises,
// when the system has it (the sandbox sees the host's /usr read-only), else
// POSIX sh.
func shell() string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return "/bin/sh"
}
