package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/sandbox"
)

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func (s *Source) glob() tools.Tool {
	return tools.Tool{
		Name: "glob",
		Description: "Find files in the sandbox by name pattern: * and ? within a path segment, ** across folders, " +
			"{a,b} alternatives, [abc] classes (for example **/*.py). Returns matching file paths, sorted.",
		Group: GroupSandbox,
		Parameters: schema(map[string]any{
			"pattern": prop("string", "Pattern relative to path (or absolute, matched against the whole virtual path)."),
			"path":    prop("string", "Folder to search; default /mnt/user-data. "+pathDoc),
		}, "pattern"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a globArgs) (string, error) {
			if a.Pattern == "" || !doublestar.ValidatePattern(a.Pattern) {
				return "", fmt.Errorf("invalid glob pattern %q", a.Pattern)
			}
			root, err := searchRoot(a.Path)
			if err != nil {
				return "", fmt.Errorf("glob: %w", err)
			}
			var (
				found []string
				more  int
			)
			err = walk(ctx, sb, root, func(fi sandbox.FileInfo) error {
				name := relTo(root, fi.Path)
				if strings.HasPrefix(a.Pattern, "/") {
					name = fi.Path
				}
				if ok, _ := doublestar.Match(a.Pattern, name); !ok {
					return nil
				}
				if len(found) == s.cfg.MaxMatches {
					more++
					return nil
				}
				found = append(found, fi.Path)
				return nil
			})
			if err != nil {
				return "", fmt.Errorf("glob: %w", err)
			}
			if len(found) == 0 {
				return fmt.Sprintf("no files match %q under %s", a.Pattern, root), nil
			}
			out := strings.Join(found, "\n")
			if more > 0 {
				out += fmt.Sprintf("\n[truncated: %d more matching files; narrow the pattern]", more)
			}
			return bound(out, s.cfg.MaxOutputBytes), nil
		}),
	}
}

type grepArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

// maxLineBytes bounds one matching line in grep's output.
const maxLineBytes = 300

func (s *Source) grep() tools.Tool {
	return tools.Tool{
		Name: "grep",
		Description: "Search file contents in the sandbox with a regular expression (RE2 syntax, as in Go). " +
			"Returns one line per match as path:line: text. Binary files are skipped.",
		Group: GroupSandbox,
		Parameters: schema(map[string]any{
			"pattern": prop("string", "RE2 regular expression, matched against each line; (?i) makes it case-insensitive."),
			"path":    prop("string", "File or folder to search; default /mnt/user-data. "+pathDoc),
			"glob":    prop("string", "Only search files matching this pattern: without a / it matches file names (*.go), with one the path relative to path (src/**/*.go)."),
		}, "pattern"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a grepArgs) (string, error) {
			re, err := regexp.Compile(a.Pattern)
			if err != nil {
				return "", fmt.Errorf("invalid pattern: %v", err)
			}
			if a.Glob != "" && !doublestar.ValidatePattern(a.Glob) {
				return "", fmt.Errorf("invalid glob %q", a.Glob)
			}
			root, err := searchRoot(a.Path)
			if err != nil {
				return "", fmt.Errorf("grep: %w", err)
			}
			g := grepper{re: re, limit: s.cfg.MaxMatches}
			err = walk(ctx, sb, root, func(fi sandbox.FileInfo) error {
				if a.Glob != "" && !globMatches(a.Glob, root, fi.Path) {
					return nil
				}
				if fi.Size > s.cfg.MaxGrepFileBytes {
					g.skipped++
					return nil
				}
				data, err := sb.p.ReadFile(ctx, sb.id, fi.Path)
				if errors.Is(err, sandbox.ErrNoSuchFile) {
					return nil // removed meanwhile
				}
				if err != nil {
					return err
				}
				if isBinary(data) {
					return nil
				}
				return g.file(fi.Path, string(data))
			})
			if err != nil {
				return "", fmt.Errorf("grep: %w", err)
			}
			return bound(g.result(a.Pattern, root, s.cfg.MaxGrepFileBytes), s.cfg.MaxOutputBytes), nil
		}),
	}
}

// grepper collects matches up to a limit.
type grepper struct {
	re      *regexp.Regexp
	limit   int
	lines   []string
	full    bool
	skipped int
}

func (g *grepper) file(p, text string) error {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if !g.re.MatchString(line) {
			continue
		}
		if len(g.lines) == g.limit {
			g.full = true
			return fs.SkipAll
		}
		g.lines = append(g.lines, fmt.Sprintf("%s:%d: %s", p, i+1, bound(line, maxLineBytes)))
	}
	return nil
}

func (g *grepper) result(pattern, root string, maxFile int64) string {
	var b strings.Builder
	if len(g.lines) == 0 {
		fmt.Fprintf(&b, "no matches for %q under %s", pattern, root)
	}
	b.WriteString(strings.Join(g.lines, "\n"))
	if g.full {
		fmt.Fprintf(&b, "\n[truncated: stopped after %d matches; narrow the pattern, path or glob]", g.limit)
	}
	if g.skipped > 0 {
		fmt.Fprintf(&b, "\n[skipped %d files larger than %d bytes]", g.skipped, maxFile)
	}
	return b.String()
}

// searchRoot is glob's and grep's folder: the given one or /mnt/user-data.
func searchRoot(p string) (string, error) {
	if p == "" {
		return sandbox.UserData, nil
	}
	return sandbox.CleanPath(p)
}

// walk is Provider.Walk where fs.SkipAll ends the walk early without error.
func walk(ctx context.Context, sb box, root string, fn func(sandbox.FileInfo) error) error {
	err := sb.p.Walk(ctx, sb.id, root, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// relTo is p relative to root; a walk rooted at a file yields its name.
func relTo(root, p string) string {
	if p == root {
		return path.Base(p)
	}
	return strings.TrimPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// globMatches applies grep's file filter: a pattern without / matches the
// file name, one with / the path relative to the search root.
func globMatches(pattern, root, p string) bool {
	name := relTo(root, p)
	if !strings.Contains(pattern, "/") {
		name = path.Base(p)
	}
	ok, _ := doublestar.Match(pattern, name)
	return ok
}
