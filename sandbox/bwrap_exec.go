package sandbox

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Exec implements Provider: one bubblewrap run of `sh -c command`.
//
// The command line is prlimit → bwrap → sh. With cgroups it starts behind
// a gate (see process.confine): the server moves it into the sandbox's
// groups before it may run anything, so no process of the command is ever
// born outside its limits. Wall time and output are enforced by the server,
// which kills bubblewrap's process group; --die-with-parent takes the
// sandbox's PID 1 with it, and the kernel the rest of its PID namespace.
func (p *Bwrap) Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error) {
	b, ctx, done, err := p.boxes.begin(ctx, id)
	if err != nil {
		return ExecResult{}, err
	}
	defer done()
	env, err := p.cfg.Env.Build(req.Env, "")
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec in %s: %w", id, err)
	}
	st := b.extra.(*bwrapBox)
	args := append(p.rlimitArgs(st.cg), "--", p.cfg.BwrapPath)
	args = append(args, p.mountArgs(b, st.network.Load())...)
	args = append(args, "--", shell(), "-c", req.Command)
	var confine func(int) error
	if st.cg != nil {
		confine = st.cg.join
	}

	var oom0, fork0 int64
	if st.cg != nil {
		oom0, fork0 = st.cg.counters()
	}
	// The environment goes to bubblewrap's own environment (built from
	// scratch, never the server's), not --setenv, so per-call secrets do
	// not appear in its command line in the host's process table.
	res, err := run(ctx, process{
		path:      p.cfg.PrlimitPath,
		args:      args,
		env:       env,
		dir:       "/",
		cred:      p.cred,
		wall:      p.cfg.Limits.wall(req.Timeout),
		maxOutput: p.cfg.Limits.OutputBytes,
		confine:   confine,
	})
	if err != nil {
		return res, fmt.Errorf("exec in %s: %w", id, err)
	}
	if res.Killed == "" {
		res.Killed = p.limitHit(st.cg, oom0, fork0, res.ExitCode)
	}
	return res, nil
}

// limitHit names the resource limit enforced during a command: a cgroup
// OOM kill or refused fork counted during the run (even when the command
// went on to exit 0, as a pipeline whose first stage was killed does), or
// a death by SIGXCPU (RLIMIT_CPU). Empty when none was. Counters are per
// sandbox, so a command running concurrently in the same sandbox can be
// blamed for its neighbour's hit.
func (p *Bwrap) limitHit(cg *cgroupSet, oom0, fork0 int64, exitCode int) string {
	if cg != nil {
		oom, fork := cg.counters()
		if oom > oom0 {
			return "memory"
		}
		if fork > fork0 {
			return "procs"
		}
	}
	if exitCode == 128+int(syscall.SIGXCPU) {
		return "cpu"
	}
	return ""
}

// rlimitArgs are prlimit(1)'s options for every command: CPU seconds and
// file size always, core dumps off, and address space and process count
// only where no cgroup covers memory or pids. prlimit runs as the sandbox
// uid and lowers its own limits before it execs bubblewrap (the server
// may lack CAP_SYS_RESOURCE to set them on another uid's process, as in
// containers). RLIMIT_NPROC counts every process of that uid on the host,
// which is why it is only the fallback; it never bites root, which
// commands never run as.
func (p *Bwrap) rlimitArgs(cg *cgroupSet) []string {
	l := p.cfg.Limits
	cpu := int64(max(1, (l.CPUTime+time.Second-1)/time.Second))
	out := []string{
		// SIGXCPU at the soft limit (reported as Killed="cpu"), SIGKILL a
		// second later for a process that ignores it.
		fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1),
		fmt.Sprintf("--fsize=%d", p.cfg.MaxFileBytes),
		"--core=0",
	}
	if cg == nil || cg.memDir == "" {
		out = append(out, fmt.Sprintf("--as=%d", l.MemoryBytes))
	}
	if cg == nil || cg.pidsDir == "" {
		out = append(out, fmt.Sprintf("--nproc=%d", l.MaxProcs))
	}
	return out
}
