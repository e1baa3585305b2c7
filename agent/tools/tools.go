package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/policy"
)

// Tool is one capability an agent may call.
type Tool struct {
	Name        string
	Description string
	// Group lets policy grant or deny tools together (e.g. "sandbox").
	Group string
	// Parameters is a JSON Schema object describing the arguments.
	Parameters json.RawMessage
	// Deferred tools are not shown to the model until promoted by search.
	Deferred bool
	// Run executes the call; an error becomes an error result the model sees.
	Run func(ctx context.Context, call Call) (string, error)
}

// Call is one execution request.
type Call struct {
	TenantID, ThreadID, RunID uuid.UUID
	Principal                 policy.Principal
	CallID                    string
	Arguments                 json.RawMessage
}

// Scope is what a source may use to decide which tools it offers.
type Scope struct {
	TenantID  uuid.UUID
	Agent     string
	Principal policy.Principal
}

// Source offers tools. Sources are registered in priority order.
type Source interface {
	Name() string
	Tools(ctx context.Context, scope Scope) ([]Tool, error)
}

// Dropped records a tool a lower-priority source also offered.
type Dropped struct {
	Name, Source, KeptFrom string
}

// Registry holds the sources in priority order.
type Registry struct {
	sources []Source
}

// NewRegistry builds a registry; earlier sources win name clashes.
func NewRegistry(sources ...Source) *Registry { return &Registry{sources: sources} }

// validName is the tool name alphabet models accept.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Available collects every source's tools, first source winning, with the
// dropped duplicates. A failing source is an error: better no run than a
// run with a silently different tool set.
func (r *Registry) Available(ctx context.Context, scope Scope) ([]Tool, []Dropped, error) {
	var (
		out     []Tool
		dropped []Dropped
		from    = map[string]string{}
	)
	for _, src := range r.sources {
		ts, err := src.Tools(ctx, scope)
		if err != nil {
			return nil, nil, fmt.Errorf("tool source %s: %w", src.Name(), err)
		}
		for _, t := range ts {
			if !validName.MatchString(t.Name) {
				dropped = append(dropped, Dropped{Name: t.Name, Source: src.Name(), KeptFrom: "(invalid name)"})
				continue
			}
			if kept, dup := from[t.Name]; dup {
				dropped = append(dropped, Dropped{Name: t.Name, Source: src.Name(), KeptFrom: kept})
				continue
			}
			from[t.Name] = src.Name()
			out = append(out, t)
		}
	}
	return out, dropped, nil
}

// Static is a fixed set of tools; tests and platform config use it.
type Static struct {
	SourceName string
	List       []Tool
}

// Name names the source.
func (s Static) Name() string { return s.SourceName }

// Tools returns the fixed list.
func (s Static) Tools(context.Context, Scope) ([]Tool, error) { return s.List, nil }
