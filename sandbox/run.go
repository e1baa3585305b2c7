package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// process is one command line to run under the wall-time and output
// limits, in its own process group so everything it starts can be killed
// at once.
type process struct {
	path string
	args []string
	env  []string
	dir  string
	cred *syscall.Credential
	// wall is the wall-time limit; maxOutput the stdout+stderr bytes kept.
	wall      time.Duration
	maxOutput int64
	// confine, when set, runs after the process exists and before it may
	// run anything: the process is started behind a gate (gateScript) so
	// resource limits and cgroup membership apply before its first fork.
	confine func(pid int) error
}

// gateScript holds a process until the server writes "go" on fd 3, then
// execs the real command line. It fails closed: if the server dies or
// closes the pipe without the word, the command never runs.
const gateScript = `read -r gate <&3 && [ "$gate" = go ] && exec 3<&- "$@"; exit 125`

// run starts p, enforces its limits and waits for it. A context
// cancellation kills the process group and returns ctx.Err() with what was
// captured so far.
func run(ctx context.Context, p process) (ExecResult, error) {
	out := &capWriter{max: p.maxOutput}
	name, args := p.path, p.args
	var gateR, gateW *os.File
	if p.confine != nil {
		var err error
		if gateR, gateW, err = os.Pipe(); err != nil {
			return ExecResult{}, fmt.Errorf("gate pipe: %w", err)
		}
		defer gateW.Close()
		name, args = "/bin/sh", append([]string{"-c", gateScript, "gate", p.path}, p.args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = p.env, p.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	cmd.WaitDelay = 2 * time.Second
	if gateR != nil {
		cmd.ExtraFiles = []*os.File{gateR}
	}

	var (
		mu     sync.Mutex
		killed string
	)
	kill := func(reason string) {
		mu.Lock()
		if killed == "" {
			killed = reason
		}
		mu.Unlock()
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}

	start := time.Now()
	err := cmd.Start()
	if gateR != nil {
		_ = gateR.Close()
	}
	if err != nil {
		return ExecResult{}, fmt.Errorf("start %s: %w", p.path, err)
	}
	out.setOverflow(func() { kill("output") })
	if p.confine != nil {
		if err := p.confine(cmd.Process.Pid); err != nil {
			kill("confine")
			_ = cmd.Wait()
			return ExecResult{}, fmt.Errorf("confine %s: %w", p.path, err)
		}
		if _, err := gateW.WriteString("go\n"); err != nil {
			kill("confine")
			_ = cmd.Wait()
			return ExecResult{}, fmt.Errorf("release gate: %w", err)
		}
		_ = gateW.Close()
	}
	timer := time.AfterFunc(p.wall, func() { kill("timeout") })
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() { kill("cancelled") })
	defer stop()

	waitErr := cmd.Wait()
	res := ExecResult{Duration: time.Since(start)}
	res.Output, res.Truncated = out.result()
	mu.Lock()
	res.Killed = killed
	mu.Unlock()
	if res.Killed == "cancelled" {
		res.Killed = ""
		return res, ctx.Err()
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitCode(exitErr.ProcessState)
	case errors.Is(waitErr, exec.ErrWaitDelay):
		res.ExitCode = exitCode(cmd.ProcessState)
	default:
		return res, fmt.Errorf("wait %s: %w", p.path, waitErr)
	}
	return res, nil
}

// exitCode reports a signal death the way a shell does: 128+signal.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// capWriter keeps the first max bytes written to it and discards the rest,
// calling overflow once when the limit is crossed; it never fails a write,
// so the pipe keeps draining until the process is dead.
type capWriter struct {
	mu       sync.Mutex
	buf      []byte
	max      int64
	over     bool
	overflow func()
	fired    bool
}

func (w *capWriter) setOverflow(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.overflow = fn
	if w.over && !w.fired {
		w.fired = true
		go fn()
	}
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return len(p), nil
	}
	room := w.max - int64(len(w.buf))
	if int64(len(p)) <= room {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.buf = append(w.buf, p[:max(room, 0)]...)
	w.over = true
	if w.overflow != nil && !w.fired {
		w.fired = true
		go w.overflow()
	}
	return len(p), nil
}

// result is the kept output, cut back to a whole UTF-8 character when it
// was truncated.
func (w *capWriter) result() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if w.over {
		for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return string(b), w.over
}
