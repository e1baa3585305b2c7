package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/sandbox"
)

type presentArgs struct {
	Paths []string `json:"paths"`
}

// presentFiles declares deliverables. It checks every path before
// recording any: all of them are recorded, or none.
func (s *Source) presentFiles() tools.Tool {
	return tools.Tool{
		Name: "present_files",
		Description: "Present files you produced to the user. Only files (or folders) under /mnt/user-data/outputs " +
			"that exist can be presented; write them there first. Returns the thread's list of presented files.",
		Group: GroupBuiltin,
		Parameters: schema(map[string]any{
			"paths": map[string]any{
				"type": "array", "minItems": 1, "items": map[string]any{"type": "string"},
				"description": "Paths under /mnt/user-data/outputs, absolute or as outputs/<name>.",
			},
		}, "paths"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, call tools.Call, a presentArgs) (string, error) {
			if len(a.Paths) == 0 {
				return "", errors.New("nothing presented: paths must name at least one file")
			}
			var (
				clean []string
				seen  = map[string]bool{}
			)
			for _, p := range a.Paths {
				v, err := outputPath(p)
				if err != nil {
					return "", fmt.Errorf("nothing presented: %w", err)
				}
				if _, err := sb.p.Stat(ctx, sb.id, v); err != nil {
					if errors.Is(err, sandbox.ErrNoSuchFile) {
						return "", fmt.Errorf("nothing presented: %s does not exist; write it first", v)
					}
					return "", fmt.Errorf("nothing presented: %w", err)
				}
				if !seen[v] {
					seen[v] = true
					clean = append(clean, v)
				}
			}
			all, err := s.artifacts.PresentFiles(ctx, call.TenantID, call.ThreadID, call.RunID, clean)
			if err != nil {
				return "", fmt.Errorf("nothing presented: %w", err)
			}
			return bound(fmt.Sprintf("presented %d path(s). The thread's artifacts, in order:\n%s", len(clean), strings.Join(all, "\n")), s.cfg.MaxOutputBytes), nil
		}),
	}
}

// outputPath normalizes a path given to present_files: absolute virtual
// paths as they are, "outputs/..." relative to /mnt/user-data, any other
// relative path relative to the workspace (as in every file tool). The
// result must lie strictly under /mnt/user-data/outputs.
func outputPath(p string) (string, error) {
	if p == "outputs" || strings.HasPrefix(p, "outputs/") {
		p = sandbox.UserData + "/" + p
	}
	v, err := sandbox.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("%q is not a sandbox path under %s", p, sandbox.Outputs)
	}
	if !strings.HasPrefix(v, sandbox.Outputs+"/") {
		return "", fmt.Errorf("%q is not under %s; only files there can be presented", p, sandbox.Outputs)
	}
	return v, nil
}
