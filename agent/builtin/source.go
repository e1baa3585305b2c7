package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/sandbox"
)

// Tool groups, for agents' tool_groups and capability policy.
const (
	GroupSandbox = "sandbox"
	GroupBuiltin = "builtin"
)

// Sandboxes finds (lazily acquiring) a thread's sandbox; sandbox.Manager
// implements it.
type Sandboxes interface {
	Ensure(ctx context.Context, tenantID, threadID uuid.UUID) (id string, replaced bool, err error)
	Provider() sandbox.Provider
}

// Artifacts records presented paths; agent.Service implements it.
type Artifacts interface {
	PresentFiles(ctx context.Context, tenantID, threadID, runID uuid.UUID, paths []string) ([]string, error)
}

// Config bounds what the tools return.
type Config struct {
	// MaxOutputBytes bounds one tool result; more is cut with a
	// "[truncated: N more bytes]" marker.
	MaxOutputBytes int
	// ReadLines is read_file's default limit.
	ReadLines int
	// MaxMatches bounds glob results and grep matches.
	MaxMatches int
	// MaxGrepFileBytes: grep skips larger files.
	MaxGrepFileBytes int64
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = 32 << 10
	}
	if c.ReadLines == 0 {
		c.ReadLines = 2000
	}
	if c.MaxMatches == 0 {
		c.MaxMatches = 200
	}
	if c.MaxGrepFileBytes == 0 {
		c.MaxGrepFileBytes = 4 << 20
	}
	return c
}

// Source offers the builtin tools.
type Source struct {
	sandboxes Sandboxes
	artifacts Artifacts
	cfg       Config
	// edits serializes edit_file's read-modify-write against other writes
	// of the same file from this process.
	edits pathLocks
}

// New builds the source. Without sandboxes it offers no sandbox tools;
// without artifacts, no present_files.
func New(sandboxes Sandboxes, artifacts Artifacts, cfg Config) *Source {
	return &Source{sandboxes: sandboxes, artifacts: artifacts, cfg: cfg.WithDefaults()}
}

// Name names the source in the registry.
func (s *Source) Name() string { return "builtin" }

// Tools lists the tools in a fixed order.
func (s *Source) Tools(context.Context, tools.Scope) ([]tools.Tool, error) {
	var out []tools.Tool
	if s.sandboxes != nil {
		out = append(out, s.bash(), s.readFile(), s.writeFile(), s.editFile(), s.ls(), s.glob(), s.grep())
	}
	if s.sandboxes != nil && s.artifacts != nil {
		out = append(out, s.presentFiles())
	}
	return out, nil
}

// sandboxRun adapts a tool body that works on a decoded argument struct in
// the calling thread's sandbox.
func sandboxRun[A any](s *Source, fn func(ctx context.Context, sb box, call tools.Call, args A) (string, error)) func(context.Context, tools.Call) (string, error) {
	return func(ctx context.Context, call tools.Call) (string, error) {
		var args A
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return "", fmt.Errorf("invalid arguments: %v", err)
		}
		id, _, err := s.sandboxes.Ensure(ctx, call.TenantID, call.ThreadID)
		if errors.Is(err, sandbox.ErrLeaseConflict) {
			return "", errors.New("the thread's sandbox is in use by another worker; try again shortly")
		}
		if err != nil {
			return "", err
		}
		return fn(ctx, box{id: id, p: s.sandboxes.Provider()}, call, args)
	}
}

// box is one acquired sandbox.
type box struct {
	id string
	p  sandbox.Provider
}

// bound cuts s to max bytes on a character boundary and says how much was
// left out.
func bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: %d more bytes]", len(s)-cut)
}

// schema builds a closed JSON Schema object.
func schema(props map[string]any, required ...string) json.RawMessage {
	if required == nil {
		required = []string{}
	}
	raw, err := json.Marshal(map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	})
	if err != nil {
		panic(err) // static schemas
	}
	return raw
}

func prop(typ, desc string) map[string]any { return map[string]any{"type": typ, "description": desc} }

// pathLocks is a per-(sandbox, path) mutex table whose entries live only
// while held or awaited.
type pathLocks struct {
	mu sync.Mutex
	m  map[[2]string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int
}

func (l *pathLocks) lock(id, path string) (unlock func()) {
	k := [2]string{id, path}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[[2]string]*pathLock{}
	}
	e := l.m[k]
	if e == nil {
		e = &pathLock{}
		l.m[k] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, k)
		}
		l.mu.Unlock()
	}
}
