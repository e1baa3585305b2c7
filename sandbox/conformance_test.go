package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// conformanceLimits are the limits every provider under the conformance
// suite is built with.
var conformanceLimits = Limits{
	WallTime:    20 * time.Second,
	CPUTime:     20 * time.Second,
	MemoryBytes: 512 << 20,
	MaxProcs:    128,
	OutputBytes: 64 << 10,
}

// runConformance checks the behaviour every Provider must share. Each
// subtest builds its own provider with newProvider (configured with
// conformanceLimits) and works on fresh threads.
func runConformance(t *testing.T, newProvider func(t *testing.T) Provider) {
	t.Helper()
	ctx := t.Context()
	acquire := func(t *testing.T, p Provider) string {
		t.Helper()
		id, err := p.Acquire(ctx, uuid.New(), uuid.New(), AcquireOptions{})
		require.NoError(t, err)
		return id
	}
	exec := func(t *testing.T, p Provider, id, cmd string) ExecResult {
		t.Helper()
		res, err := p.Exec(ctx, id, ExecRequest{Command: cmd})
		require.NoError(t, err)
		return res
	}

	t.Run("stable ids", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		tenant, thread := uuid.New(), uuid.New()
		a, err := p.Acquire(ctx, tenant, thread, AcquireOptions{})
		require.NoError(t, err)
		b, err := p.Acquire(ctx, tenant, thread, AcquireOptions{})
		require.NoError(t, err)
		require.Equal(t, a, b)
		c, err := p.Acquire(ctx, tenant, uuid.New(), AcquireOptions{})
		require.NoError(t, err)
		require.NotEqual(t, a, c)
		_, err = p.Acquire(ctx, uuid.New(), thread, AcquireOptions{})
		require.ErrorIs(t, err, ErrLeaseConflict, "a thread id under another tenant")
	})

	t.Run("exec and exit codes", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		tests := []struct {
			cmd  string
			out  string
			code int
		}{
			{cmd: "echo hello", out: "hello\n"},
			{cmd: "echo out; echo err >&2", out: "out\nerr\n"},
			{cmd: "exit 3", code: 3},
			{cmd: "false", code: 1},
			{cmd: "pwd", out: Workspace + "\n"},
			{cmd: "echo $HOME", out: Workspace + "\n"},
			{cmd: "kill -9 $$", code: 137},
		}
		for _, tc := range tests {
			res := exec(t, p, id, tc.cmd)
			require.Equal(t, tc.out, res.Output, tc.cmd)
			require.Equal(t, tc.code, res.ExitCode, tc.cmd)
			require.Empty(t, res.Killed, tc.cmd)
		}
	})

	t.Run("env scrubbed", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		res := exec(t, p, id, "env")
		for k, v := range serverSecrets {
			require.NotContains(t, res.Output, k)
			require.NotContains(t, res.Output, v)
		}
		require.Contains(t, res.Output, "PATH=/usr/local/bin:/usr/bin:/bin")
	})

	t.Run("per-call env", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		res, err := p.Exec(ctx, id, ExecRequest{Command: `echo "$GITHUB_TOKEN"`, Env: map[string]string{"GITHUB_TOKEN": "ghp_call"}})
		require.NoError(t, err)
		require.Equal(t, "ghp_call\n", res.Output)
		res = exec(t, p, id, `echo "[$GITHUB_TOKEN]"`)
		require.Equal(t, "[]\n", res.Output, "per-call env does not stick")
		_, err = p.Exec(ctx, id, ExecRequest{Command: "true", Env: map[string]string{"LD_PRELOAD": "x"}})
		require.ErrorIs(t, err, ErrEnvRefused)
	})

	t.Run("files round trip", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		require.NoError(t, p.WriteFile(ctx, id, "notes/a.txt", []byte("one\n"), false))
		require.NoError(t, p.WriteFile(ctx, id, "/mnt/user-data/workspace/notes/a.txt", []byte("two\n"), true))
		got, err := p.ReadFile(ctx, id, "notes/a.txt")
		require.NoError(t, err)
		require.Equal(t, "one\ntwo\n", string(got))
		require.Equal(t, "one\ntwo\n", exec(t, p, id, "cat notes/a.txt").Output)

		res := exec(t, p, id, "mkdir -p ../outputs/r && echo report > ../outputs/r/x.md && echo more >> notes/a.txt")
		require.Zero(t, res.ExitCode, res.Output)
		got, err = p.ReadFile(ctx, id, "/mnt/user-data/outputs/r/x.md")
		require.NoError(t, err)
		require.Equal(t, "report\n", string(got))
		require.NoError(t, p.WriteFile(ctx, id, "notes/a.txt", []byte("new"), false))
		got, err = p.ReadFile(ctx, id, "notes/a.txt")
		require.NoError(t, err)
		require.Equal(t, "new", string(got), "overwrite truncates")

		_, err = p.ReadFile(ctx, id, "missing.txt")
		require.ErrorIs(t, err, ErrNoSuchFile)
	})

	t.Run("concurrent appends", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				line := strings.Repeat(fmt.Sprint(i%10), 100) + "\n"
				require.NoError(t, p.WriteFile(ctx, id, "log.txt", []byte(line), true))
			})
		}
		wg.Wait()
		got, err := p.ReadFile(ctx, id, "log.txt")
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
		require.Len(t, lines, 50)
		for _, l := range lines {
			require.Len(t, l, 100)
			require.Equal(t, strings.Repeat(l[:1], 100), l)
		}
	})

	t.Run("list stat walk", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		for _, f := range []string{"b.txt", "a/one.txt", "a/deep/two.txt", "/mnt/user-data/outputs/o.md"} {
			require.NoError(t, p.WriteFile(ctx, id, f, []byte("12345"), false))
		}
		exec(t, p, id, "ln -s b.txt link")

		entries, err := p.List(ctx, id, Workspace)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Path)
		}
		require.Equal(t, []string{Workspace + "/a", Workspace + "/b.txt", Workspace + "/link"}, names)
		require.True(t, entries[0].IsDir)

		roots, err := p.List(ctx, id, UserData)
		require.NoError(t, err)
		require.Len(t, roots, 3)

		info, err := p.Stat(ctx, id, "a/one.txt")
		require.NoError(t, err)
		require.Equal(t, FileInfo{Path: Workspace + "/a/one.txt", Size: 5, Mode: info.Mode, ModTime: info.ModTime}, info)
		require.WithinDuration(t, time.Now(), info.ModTime, time.Minute)
		_, err = p.Stat(ctx, id, "nope")
		require.ErrorIs(t, err, ErrNoSuchFile)

		var walked []string
		require.NoError(t, p.Walk(ctx, id, UserData, func(fi FileInfo) error {
			walked = append(walked, fi.Path)
			return nil
		}))
		require.Equal(t, []string{
			"/mnt/user-data/outputs/o.md",
			Workspace + "/a/deep/two.txt", Workspace + "/a/one.txt", Workspace + "/b.txt",
		}, walked, "regular files only, lexical order, symlinks skipped")
	})

	t.Run("path refusals", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		exec(t, p, id, "ln -s /etc/passwd passwd; ln -s ../../../../../../../../etc etcdir")
		for _, bad := range []string{"/etc/passwd", "../../../etc/passwd", "/proc/self/root/etc/passwd", "passwd", "etcdir/passwd", "/mnt/user-data/../../etc/hosts"} {
			_, err := p.ReadFile(ctx, id, bad)
			require.ErrorIs(t, err, ErrPathRefused, bad)
			_, err = p.Stat(ctx, id, bad)
			require.ErrorIs(t, err, ErrPathRefused, bad)
			err = p.WriteFile(ctx, id, bad, []byte("x"), false)
			require.ErrorIs(t, err, ErrPathRefused, bad)
		}
		_, err := p.List(ctx, id, "etcdir")
		require.ErrorIs(t, err, ErrPathRefused)
		require.ErrorIs(t, p.WriteFile(ctx, id, "/mnt/skills/x", []byte("x"), false), ErrReadOnly)
		require.ErrorIs(t, p.WriteFile(ctx, id, "/mnt/user-data/x", []byte("x"), false), ErrReadOnly)
	})

	t.Run("threads isolated", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		tenant := uuid.New()
		a, err := p.Acquire(ctx, tenant, uuid.New(), AcquireOptions{})
		require.NoError(t, err)
		b, err := p.Acquire(ctx, tenant, uuid.New(), AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, p.WriteFile(ctx, b, "secret.txt", []byte("thread b"), false))
		_, err = p.ReadFile(ctx, a, "secret.txt")
		require.ErrorIs(t, err, ErrNoSuchFile)
		var seen []string
		require.NoError(t, p.Walk(ctx, a, UserData, func(fi FileInfo) error { seen = append(seen, fi.Path); return nil }))
		require.Empty(t, seen)
	})

	t.Run("release and destroy keep files", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		tenant, thread := uuid.New(), uuid.New()
		id, err := p.Acquire(ctx, tenant, thread, AcquireOptions{})
		require.NoError(t, err)
		require.NoError(t, p.WriteFile(ctx, id, "keep.txt", []byte("kept"), false))
		require.NoError(t, p.Release(ctx, id))
		again, err := p.Acquire(ctx, tenant, thread, AcquireOptions{})
		require.NoError(t, err)
		require.Equal(t, id, again)
		require.Equal(t, "kept", exec(t, p, id, "cat keep.txt").Output)

		require.NoError(t, p.Destroy(ctx, id))
		_, err = p.Exec(ctx, id, ExecRequest{Command: "true"})
		require.ErrorIs(t, err, ErrNotFound)
		_, err = p.ReadFile(ctx, id, "keep.txt")
		require.ErrorIs(t, err, ErrNotFound)
		require.ErrorIs(t, p.Destroy(ctx, id), ErrNotFound)
		require.ErrorIs(t, p.Release(ctx, id), ErrNotFound)

		again, err = p.Acquire(ctx, tenant, thread, AcquireOptions{})
		require.NoError(t, err)
		require.Equal(t, id, again, "a thread's sandbox id never changes")
		got, err := p.ReadFile(ctx, again, "keep.txt")
		require.NoError(t, err)
		require.Equal(t, "kept", string(got))
	})

	t.Run("destroy kills running commands", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		done := make(chan error, 1)
		go func() {
			_, err := p.Exec(ctx, id, ExecRequest{Command: "sleep 30"})
			done <- err
		}()
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		require.NoError(t, p.Destroy(ctx, id))
		require.Error(t, <-done)
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("wall time", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		start := time.Now()
		res, err := p.Exec(ctx, id, ExecRequest{Command: "sleep 30 & sleep 30", Timeout: 300 * time.Millisecond})
		require.NoError(t, err)
		require.Equal(t, "timeout", res.Killed)
		require.NotZero(t, res.ExitCode)
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("output limit", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		start := time.Now()
		res := exec(t, p, id, "yes")
		require.Equal(t, "output", res.Killed)
		require.True(t, res.Truncated)
		require.Len(t, res.Output, int(conformanceLimits.OutputBytes))
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("context cancel", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := acquire(t, p)
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := p.Exec(cctx, id, ExecRequest{Command: "sleep 30"})
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("unknown id", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		_, err := p.Exec(ctx, "nope", ExecRequest{Command: "true"})
		require.ErrorIs(t, err, ErrNotFound)
		_, err = p.Stat(ctx, "nope", "a")
		require.ErrorIs(t, err, ErrNotFound)
	})
}

func TestHostConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) Provider {
		h, err := NewHost(Tree{Root: t.TempDir()}, conformanceLimits, true)
		require.NoError(t, err)
		return h
	})
}

func TestHostOffByDefault(t *testing.T) {
	t.Parallel()
	_, err := NewHost(Tree{Root: t.TempDir()}, Limits{}, false)
	require.ErrorIs(t, err, ErrProviderOff)
}
