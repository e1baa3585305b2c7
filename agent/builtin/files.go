package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/sandbox"
)

const pathDoc = "Virtual path: absolute under /mnt/user-data or /mnt/skills, or relative to /mnt/user-data/workspace."

type readArgs struct {
	Path   string `json:"path"`
	Offset *int   `json:"offset"`
	Limit  *int   `json:"limit"`
}

// readFile returns a window of a text file's lines, verbatim (no line
// numbers, so text can be copied into edit_file), with a note when lines
// were left out.
func (s *Source) readFile() tools.Tool {
	return tools.Tool{
		Name:        "read_file",
		Description: "Read a text file from the sandbox. Returns the file's lines verbatim; use offset and limit to page through long files.",
		Group:       GroupSandbox,
		Parameters: schema(map[string]any{
			"path":   prop("string", "The file. "+pathDoc),
			"offset": map[string]any{"type": "integer", "minimum": 1, "description": "First line to return, 1-based; default 1."},
			"limit":  map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("How many lines to return; default %d.", s.cfg.ReadLines)},
		}, "path"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a readArgs) (string, error) {
			offset, limit := 1, s.cfg.ReadLines
			if a.Offset != nil {
				if offset = *a.Offset; offset < 1 {
					return "", fmt.Errorf("offset must be at least 1 (lines are numbered from 1), got %d", offset)
				}
			}
			if a.Limit != nil {
				if limit = *a.Limit; limit < 1 {
					return "", fmt.Errorf("limit must be at least 1, got %d", limit)
				}
			}
			data, err := sb.p.ReadFile(ctx, sb.id, a.Path)
			if err != nil {
				return "", fmt.Errorf("read_file: %w", err)
			}
			if len(data) == 0 {
				return "(empty file)", nil
			}
			if isBinary(data) {
				return fmt.Sprintf("%s is a binary file (%d bytes); inspect it with bash (for example xxd or file).", a.Path, len(data)), nil
			}
			lines := strings.SplitAfter(string(data), "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			if offset > len(lines) {
				return "", fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, a.Path, len(lines))
			}
			end := min(offset-1+limit, len(lines))
			out := strings.Join(lines[offset-1:end], "")
			if offset > 1 || end < len(lines) {
				if !strings.HasSuffix(out, "\n") {
					out += "\n"
				}
				out += fmt.Sprintf("[lines %d-%d of %d; use offset and limit to read more]", offset, end, len(lines))
			}
			return bound(out, s.cfg.MaxOutputBytes), nil
		}),
	}
}

// isBinary guesses from a NUL byte near the start, as grep and git do.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Append  bool   `json:"append"`
}

func (s *Source) writeFile() tools.Tool {
	return tools.Tool{
		Name: "write_file",
		Description: "Create or overwrite a text file in the sandbox (parent folders are created), or append to it. " +
			"Writable: /mnt/user-data/uploads, workspace and outputs; put deliverables in /mnt/user-data/outputs.",
		Group: GroupSandbox,
		Parameters: schema(map[string]any{
			"path":    prop("string", "The file. "+pathDoc),
			"content": prop("string", "The text to write."),
			"append":  prop("boolean", "Append to the file instead of replacing it; default false."),
		}, "path", "content"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a writeArgs) (string, error) {
			v, err := sandbox.CleanPath(a.Path)
			if err != nil {
				return "", fmt.Errorf("write_file: %w", err)
			}
			unlock := s.edits.lock(sb.id, v)
			defer unlock()
			if err := sb.p.WriteFile(ctx, sb.id, v, []byte(a.Content), a.Append); err != nil {
				return "", fmt.Errorf("write_file: %w", err)
			}
			if a.Append {
				return fmt.Sprintf("appended %d bytes to %s", len(a.Content), v), nil
			}
			return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), v), nil
		}),
	}
}

type editArgs struct {
	Path      string `json:"path"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

func (s *Source) editFile() tools.Tool {
	return tools.Tool{
		Name: "edit_file",
		Description: "Replace one exact occurrence of old_string with new_string in a sandbox file. old_string must " +
			"occur exactly once (whitespace included); add surrounding lines to make it unique.",
		Group: GroupSandbox,
		Parameters: schema(map[string]any{
			"path":       prop("string", "The file. "+pathDoc),
			"old_string": prop("string", "The exact text to replace; must occur exactly once."),
			"new_string": prop("string", "The replacement text."),
		}, "path", "old_string", "new_string"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a editArgs) (string, error) {
			if a.OldString == "" {
				return "", errors.New("old_string must not be empty")
			}
			if a.OldString == a.NewString {
				return "", errors.New("old_string and new_string are identical; nothing to change")
			}
			v, err := sandbox.CleanPath(a.Path)
			if err != nil {
				return "", fmt.Errorf("edit_file: %w", err)
			}
			if !sandbox.Writable(v) {
				return "", fmt.Errorf("edit_file: %s: %w", v, sandbox.ErrReadOnly)
			}
			unlock := s.edits.lock(sb.id, v)
			defer unlock()
			data, err := sb.p.ReadFile(ctx, sb.id, v)
			if err != nil {
				return "", fmt.Errorf("edit_file: %w", err)
			}
			text := string(data)
			switch n := strings.Count(text, a.OldString); n {
			case 1:
			case 0:
				return "", fmt.Errorf("old_string was not found in %s (0 matches); it must match the file exactly, whitespace included", v)
			default:
				return "", fmt.Errorf("old_string matches %d times in %s; it must match exactly once, so include more surrounding text", n, v)
			}
			text = strings.Replace(text, a.OldString, a.NewString, 1)
			if err := sb.p.WriteFile(ctx, sb.id, v, []byte(text), false); err != nil {
				return "", fmt.Errorf("edit_file: %w", err)
			}
			return fmt.Sprintf("edited %s: replaced 1 occurrence", v), nil
		}),
	}
}

type lsArgs struct {
	Path string `json:"path"`
}

// maxEntries bounds one ls listing.
const maxEntries = 1000

func (s *Source) ls() tools.Tool {
	return tools.Tool{
		Name:        "ls",
		Description: "List a sandbox directory: one entry per line, folders with a trailing /, files with their size.",
		Group:       GroupSandbox,
		Parameters: schema(map[string]any{
			"path": prop("string", "The directory (or a file). "+pathDoc),
		}, "path"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a lsArgs) (string, error) {
			info, err := sb.p.Stat(ctx, sb.id, a.Path)
			if err != nil {
				return "", fmt.Errorf("ls: %w", err)
			}
			if !info.IsDir {
				return entry(info, info.Path), nil
			}
			entries, err := sb.p.List(ctx, sb.id, info.Path)
			if err != nil {
				return "", fmt.Errorf("ls: %w", err)
			}
			if len(entries) == 0 {
				return info.Path + ": (empty directory)", nil
			}
			var b strings.Builder
			b.WriteString(info.Path + ":\n")
			for i, e := range entries {
				if i == maxEntries {
					fmt.Fprintf(&b, "[truncated: %d more entries]\n", len(entries)-i)
					break
				}
				b.WriteString(entry(e, strings.TrimPrefix(e.Path, strings.TrimSuffix(info.Path, "/")+"/")) + "\n")
			}
			return bound(strings.TrimSuffix(b.String(), "\n"), s.cfg.MaxOutputBytes), nil
		}),
	}
}

func entry(e sandbox.FileInfo, name string) string {
	switch {
	case e.IsDir:
		return name + "/"
	case e.Mode&fs.ModeSymlink != 0:
		return name + "  (symlink)"
	case !e.Mode.IsRegular():
		return name + "  (special file)"
	}
	return fmt.Sprintf("%s  %d bytes", name, e.Size)
}
