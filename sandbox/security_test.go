package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// securityLimits are tight enough that every attack below ends fast.
var securityLimits = Limits{
	WallTime:    15 * time.Second,
	CPUTime:     2 * time.Second,
	MemoryBytes: 256 << 20,
	MaxProcs:    64,
	OutputBytes: 1 << 20,
}

// secBox is a bwrap provider with one acquired sandbox.
type secBox struct {
	p  *Bwrap
	id string
}

func newSecBox(t *testing.T, opts AcquireOptions) secBox {
	t.Helper()
	p := newBwrap(t, securityLimits)
	id, err := p.Acquire(t.Context(), uuid.New(), uuid.New(), opts)
	require.NoError(t, err)
	return secBox{p: p, id: id}
}

func (s secBox) exec(t *testing.T, cmd string) ExecResult {
	t.Helper()
	res, err := s.p.Exec(t.Context(), s.id, ExecRequest{Command: cmd})
	require.NoError(t, err)
	return res
}

func TestSecurityFileAPIEscapes(t *testing.T) {
	t.Parallel()
	s := newSecBox(t, AcquireOptions{})
	ctx := t.Context()
	res := s.exec(t, "ln -s /etc/passwd passwd && ln -s / rootlink && ln -s /proc/self/root proc && mkdir d && ln -s ../../.. d/up")
	require.Zero(t, res.ExitCode, res.Output)
	for _, p := range []string{
		"passwd", "rootlink/etc/passwd", "proc/etc/passwd", "d/up/etc/passwd", "d/up",
		"../../../etc/passwd", "/etc/passwd", "/proc/self/root/etc/passwd",
		"/mnt/user-data/workspace/../../../etc/passwd",
	} {
		_, err := s.p.ReadFile(ctx, s.id, p)
		require.ErrorIs(t, err, ErrPathRefused, p)
		require.ErrorIs(t, s.p.WriteFile(ctx, s.id, p, []byte("x"), true), ErrPathRefused, p)
	}
	err := s.p.Walk(ctx, s.id, UserData, func(fi FileInfo) error {
		require.Fail(t, "walk must not follow symlinks", fi.Path)
		return nil
	})
	require.NoError(t, err)
}

func TestSecurityHostInvisible(t *testing.T) {
	t.Parallel()
	s := newSecBox(t, AcquireOptions{})
	root := s.p.cfg.Tree.Root
	tests := []struct{ name, cmd string }{
		{"data dir", "ls " + root},
		{"system files dir", "ls " + filepath.Join(root, "system")},
		{"work tree", "ls /work"},
		{"root home", "ls /root"},
		{"host shadow", "cat /etc/shadow"},
		{"host sudoers", "ls /etc/sudoers.d"},
		{"server process", "kill -0 " + strconv.Itoa(os.Getpid())},
		{"root fs read-only", "touch /x"},
		{"user-data itself read-only", "touch /mnt/user-data/x"},
		{"no nested user namespaces", "unshare -U true"},
		{"no host sys", "ls /sys/fs/cgroup"},
	}
	for _, tc := range tests {
		res := s.exec(t, tc.cmd)
		require.NotZero(t, res.ExitCode, "%s: %s", tc.name, res.Output)
	}
	res := s.exec(t, "id -u; cat /proc/1/cmdline | tr '\\0' ' '; echo; ps -e --no-headers | wc -l")
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	require.Len(t, lines, 3, res.Output)
	if os.Geteuid() == 0 {
		require.Equal(t, "65534", lines[0], "commands never run as root")
	}
	require.True(t, strings.Contains(lines[1], "bwrap --unshare-all"), "PID 1 is the sandbox's own init: %q", lines[1])
	n, err := strconv.Atoi(strings.TrimSpace(lines[2]))
	require.NoError(t, err)
	require.Less(t, n, 8, "only the command's own processes are visible")
}

func TestSecurityEnvLeak(t *testing.T) {
	t.Parallel()
	s := newSecBox(t, AcquireOptions{})
	res := s.exec(t, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
	for k, v := range serverSecrets {
		require.NotContains(t, res.Output, k)
		require.NotContains(t, res.Output, v)
	}
}

func TestSecurityNetwork(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf("bash -c 'echo > /dev/tcp/127.0.0.1/%d' && echo CONNECTED", port)

	off := newSecBox(t, AcquireOptions{})
	for _, cmd := range []string{
		connect,
		"bash -c 'echo > /dev/tcp/127.0.0.1/5432'",
		`python3 -c 'import socket; socket.create_connection(("1.1.1.1", 53), timeout=2)'`,
	} {
		res := off.exec(t, cmd)
		require.NotZero(t, res.ExitCode, "%s: %s", cmd, res.Output)
		require.NotContains(t, res.Output, "CONNECTED")
	}

	on := newSecBox(t, AcquireOptions{Network: true})
	res := on.exec(t, connect)
	require.Zero(t, res.ExitCode, "with Network the host listener is reachable: %s", res.Output)
}

// TestSecurityForkBomb is not parallel: without a pids cgroup the process
// limit is RLIMIT_NPROC, which counts every process of the sandbox uid,
// and the bomb would starve the other tests' commands.
func TestSecurityForkBomb(t *testing.T) {
	s := newSecBox(t, AcquireOptions{})
	start := time.Now()
	res, err := s.p.Exec(t.Context(), s.id, ExecRequest{Command: `bash -c ':(){ :|:& };:; sleep 3'`})
	require.NoError(t, err)
	require.Less(t, time.Since(start), securityLimits.WallTime+5*time.Second)
	if s.p.cg != nil && s.p.cg.pidsParent != "" {
		require.Equal(t, "procs", res.Killed, res.Output)
	}
	after := s.exec(t, "echo still here")
	require.Equal(t, "still here\n", after.Output)
}

func TestSecurityCPULoop(t *testing.T) {
	t.Parallel()
	// A generous wall time, so the CPU-time limit is what stops the loop
	// even on a loaded machine.
	limits := securityLimits
	limits.CPUTime, limits.WallTime = time.Second, time.Minute
	p := newBwrap(t, limits)
	id, err := p.Acquire(t.Context(), uuid.New(), uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	s := secBox{p: p, id: id}
	res := s.exec(t, "while :; do :; done")
	require.Equal(t, "cpu", res.Killed, res.Output)
	require.Equal(t, 128+24, res.ExitCode, "SIGXCPU")
	require.Equal(t, "ok\n", s.exec(t, "echo ok").Output)
}

func TestSecurityHugeOutput(t *testing.T) {
	t.Parallel()
	s := newSecBox(t, AcquireOptions{})
	for _, cmd := range []string{"head -c 1073741824 /dev/zero", "yes | head -c 1073741824"} {
		start := time.Now()
		res := s.exec(t, cmd)
		require.Equal(t, "output", res.Killed, cmd)
		require.True(t, res.Truncated)
		require.Len(t, res.Output, int(securityLimits.OutputBytes))
		require.Less(t, time.Since(start), 5*time.Second, cmd)
	}
}

func TestSecurityMemoryHog(t *testing.T) {
	t.Parallel()
	s := newSecBox(t, AcquireOptions{})
	start := time.Now()
	res := s.exec(t, `python3 -c 'a = b"x" * (2 << 30); print(len(a))'`)
	require.NotZero(t, res.ExitCode, res.Output)
	require.NotContains(t, res.Output, strconv.Itoa(2<<30))
	if s.p.cg != nil && s.p.cg.memParent != "" {
		require.Equal(t, "memory", res.Killed, res.Output)
	}
	// tail holds the whole newline-free "line" in memory.
	res = s.exec(t, `head -c 2147483648 /dev/zero | tail -n 1 | wc -c`)
	require.NotEqual(t, "2147483648\n", res.Output, "tail buffering 2 GiB must not succeed")
	if s.p.cg != nil && s.p.cg.memParent != "" {
		require.Equal(t, "memory", res.Killed, res.Output)
	}
	require.Less(t, time.Since(start), 2*securityLimits.WallTime)
	require.Equal(t, "ok\n", s.exec(t, "echo ok").Output)
}

func TestSecuritySkillsReadOnly(t *testing.T) {
	t.Parallel()
	p := newBwrap(t, securityLimits)
	skill := filepath.Join(p.cfg.Tree.SkillsDir(), "pdf")
	require.NoError(t, os.MkdirAll(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: pdf\n---\n"), 0o644))
	id, err := p.Acquire(t.Context(), uuid.New(), uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	s := secBox{p: p, id: id}

	require.Contains(t, s.exec(t, "cat /mnt/skills/pdf/SKILL.md").Output, "name: pdf")
	for _, cmd := range []string{"touch /mnt/skills/x", "echo evil > /mnt/skills/pdf/SKILL.md", "rm /mnt/skills/pdf/SKILL.md", "mkdir /mnt/skills/new"} {
		res := s.exec(t, cmd)
		require.NotZero(t, res.ExitCode, cmd)
	}
	got, err := p.ReadFile(t.Context(), id, "/mnt/skills/pdf/SKILL.md")
	require.NoError(t, err)
	require.Equal(t, "---\nname: pdf\n---\n", string(got))
	require.ErrorIs(t, p.WriteFile(t.Context(), id, "/mnt/skills/pdf/SKILL.md", []byte("x"), false), ErrReadOnly)
	require.ErrorIs(t, p.WriteFile(t.Context(), id, "/mnt/skills/x", []byte("x"), false), ErrReadOnly)
}

func TestSecurityThreadsIsolated(t *testing.T) {
	t.Parallel()
	p := newBwrap(t, securityLimits)
	ctx := t.Context()
	tenant := uuid.New()
	a, err := p.Acquire(ctx, tenant, uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	otherTenant := uuid.New()
	b, err := p.Acquire(ctx, otherTenant, uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	require.NoError(t, p.WriteFile(ctx, b, "/mnt/user-data/outputs/secret.txt", []byte("thread-b-secret"), false))

	bBox, err := p.boxes.get(b)
	require.NoError(t, err)
	hostPath, err := bBox.tree.Resolve("/mnt/user-data/outputs/secret.txt")
	require.NoError(t, err)
	aBox, err := p.boxes.get(a)
	require.NoError(t, err)
	rel, err := filepath.Rel(filepath.Join(aBox.tree.UserDataDir(), "workspace"), hostPath)
	require.NoError(t, err)

	for _, cmd := range []string{
		"cat " + hostPath,
		"cat " + rel,
		"cat /mnt/user-data/../../" + strings.TrimPrefix(hostPath, "/"),
		"cat /proc/1/root" + hostPath,
		// The bracket keeps the literal out of the command line, which a
		// shell may echo when a limit kills it; /usr is the read-only host
		// system (no thread data) and scanning it only burns the CPU limit.
		"grep -rs 'thread-b-sec[r]et' / --exclude-dir=proc --exclude-dir=usr; test $? -eq 0",
	} {
		res, err := p.Exec(ctx, a, ExecRequest{Command: cmd})
		require.NoError(t, err)
		require.NotZero(t, res.ExitCode, "%s: %s", cmd, res.Output)
		require.NotContains(t, res.Output, "thread-b-secret", cmd)
	}
	for _, path := range []string{hostPath, rel, "/mnt/user-data/outputs/secret.txt"} {
		_, err := p.ReadFile(ctx, a, path)
		require.Error(t, err, path)
	}
}

// TestSecurityRlimitFallback runs the resource attacks where no cgroup is
// used, as on hosts that do not delegate one: RLIMIT_AS, RLIMIT_NPROC and
// RLIMIT_CPU alone must stop them. Not parallel, for RLIMIT_NPROC's sake
// (see TestSecurityForkBomb).
func TestSecurityRlimitFallback(t *testing.T) {
	requireBwrap(t)
	limits := securityLimits
	limits.CPUTime, limits.WallTime = time.Second, time.Minute
	p, err := NewBwrap(BwrapConfig{Tree: Tree{Root: bwrapTreeRoot(t)}, Limits: limits, DisableCgroups: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Stop(t.Context())) })
	require.Contains(t, p.Mechanism(), "cgroups=none")
	id, err := p.Acquire(t.Context(), uuid.New(), uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	s := secBox{p: p, id: id}

	start := time.Now()
	res := s.exec(t, `python3 -c 'a = b"x" * (2 << 30); print(len(a))'`)
	require.NotZero(t, res.ExitCode, res.Output)
	require.Contains(t, res.Output, "MemoryError")

	if os.Geteuid() == 0 {
		// RLIMIT_NPROC never applies to root; the provider only runs
		// commands as another uid when the server is root.
		res = s.exec(t, `bash -c ':(){ :|:& };:; sleep 2'`)
		require.Contains(t, res.Output, "Resource temporarily unavailable")
	}
	res = s.exec(t, "while :; do :; done")
	require.Equal(t, "cpu", res.Killed)
	require.Equal(t, "ok\n", s.exec(t, "echo ok").Output)
	require.Less(t, time.Since(start), limits.WallTime)
}
