package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/sandbox"
)

type bashArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds *int   `json:"timeout_seconds"`
}

// bash runs a shell command in the sandbox. Its result is the command's
// interleaved stdout and stderr followed by a status line with the exit
// code and, when a limit stopped it, which one.
func (s *Source) bash() tools.Tool {
	return tools.Tool{
		Name: "bash",
		Description: "Run a shell command in the thread's sandbox (working directory /mnt/user-data/workspace; " +
			"uploads in /mnt/user-data/uploads, deliverables go to /mnt/user-data/outputs, skills read-only in /mnt/skills). " +
			"Returns stdout and stderr interleaved, then the exit code. Commands are killed at the sandbox's time, CPU, " +
			"memory and output limits.",
		Group: GroupSandbox,
		Parameters: schema(map[string]any{
			"command":         prop("string", "The command line, run by bash -c in the sandbox."),
			"timeout_seconds": map[string]any{"type": "integer", "minimum": 1, "description": "Kill the command after this many seconds; capped by the sandbox's wall-time limit."},
		}, "command"),
		Run: sandboxRun(s, func(ctx context.Context, sb box, _ tools.Call, a bashArgs) (string, error) {
			if strings.TrimSpace(a.Command) == "" {
				return "", errors.New("command must not be empty")
			}
			req := sandbox.ExecRequest{Command: a.Command}
			if a.TimeoutSeconds != nil {
				if *a.TimeoutSeconds < 1 {
					return "", fmt.Errorf("timeout_seconds must be at least 1, got %d", *a.TimeoutSeconds)
				}
				req.Timeout = time.Duration(*a.TimeoutSeconds) * time.Second
			}
			res, err := sb.p.Exec(ctx, sb.id, req)
			if err != nil {
				return "", fmt.Errorf("bash: %w", err)
			}
			return bashResult(res, s.cfg.MaxOutputBytes), nil
		}),
	}
}

// bashResult renders a command's result with its status line kept visible
// however long the output.
func bashResult(res sandbox.ExecResult, limit int) string {
	status := fmt.Sprintf("[exit code: %d", res.ExitCode)
	if res.Killed != "" {
		status += ", killed: " + res.Killed + killedHint(res.Killed)
	}
	status += "]"
	if res.Truncated {
		status += "\n[output cut at the sandbox's output limit]"
	}
	out := res.Output
	if out == "" {
		out = "(no output)"
	}
	out = bound(out, max(limit-len(status)-64, 0))
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out + status
}

func killedHint(reason string) string {
	switch reason {
	case "timeout":
		return " (the command ran past its time limit)"
	case "output":
		return " (the command wrote more than the output limit)"
	case "memory":
		return " (the command exceeded the memory limit)"
	case "cpu":
		return " (the command used up its CPU-time limit)"
	case "procs":
		return " (the command started too many processes)"
	}
	return ""
}
