package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/sandbox"
)

// newSandboxProvider builds the default sandbox provider on a throwaway tree the
// sandbox uid can reach (a temp dir with only the search bit for others).
func newSandboxProvider(b *testing.B) *sandbox.Bwrap {
	b.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatalf("bwrap is required in CI: %v", err)
		}
		b.Skipf("bwrap not installed: %v", err)
	}
	dir, err := os.MkdirTemp("", "agentplane-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		b.Fatal(err)
	}
	p, err := sandbox.NewBwrap(sandbox.BwrapConfig{Tree: sandbox.Tree{Root: filepath.Join(dir, "data")}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Stop(b.Context()) })
	return p
}

// BenchmarkSandboxBash interleaves one direct os/exec of `true` (the
// baseline: what running a command costs with no isolation at all) and
// one `true` through the bubblewrap provider's Exec on a warm sandbox,
// reporting both, their ratio, and the cold start (Acquire of a fresh
// thread plus its first Exec) measured before the loop.
func BenchmarkSandboxBash(b *testing.B) {
	p := newSandboxProvider(b)
	ctx := b.Context()
	run := func(id string) {
		res, err := p.Exec(ctx, id, sandbox.ExecRequest{Command: "true"})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v %+v", err, res)
		}
	}

	const coldRuns = 5
	var cold time.Duration
	for range coldRuns {
		start := time.Now()
		id, err := p.Acquire(ctx, uuid.New(), uuid.New(), sandbox.AcquireOptions{})
		if err != nil {
			b.Fatal(err)
		}
		run(id)
		cold += time.Since(start)
	}

	id, err := p.Acquire(ctx, uuid.New(), uuid.New(), sandbox.AcquireOptions{})
	if err != nil {
		b.Fatal(err)
	}
	run(id)
	var baseNs, boxNs time.Duration
	for b.Loop() {
		start := time.Now()
		if err := exec.CommandContext(ctx, "true").Run(); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		run(id)
		baseNs += mid.Sub(start)
		boxNs += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(baseNs)/n, "baseline-ns/op")
	b.ReportMetric(float64(boxNs)/n, "sandbox-ns/op")
	b.ReportMetric(float64(boxNs)/float64(baseNs), "ratio")
	b.ReportMetric(float64(cold)/coldRuns, "cold-acquire-ns")
}
