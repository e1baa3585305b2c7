package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"
)

// requireBwrap skips without bubblewrap, except in CI where its absence
// must fail the build rather than silently drop the security tests.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bwrap is required in CI: %v", err)
		}
		t.Skipf("bwrap not installed: %v", err)
	}
}

// bwrapTreeRoot is a tree root the sandbox uid can reach: t.TempDir's
// parent is private to root.
func bwrapTreeRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentplane-sandbox-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "data")
}

func newBwrap(t *testing.T, limits Limits) *Bwrap {
	t.Helper()
	requireBwrap(t)
	p, err := NewBwrap(BwrapConfig{Tree: Tree{Root: bwrapTreeRoot(t)}, Limits: limits})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Stop(t.Context())) })
	return p
}

func TestBwrapConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(t *testing.T) Provider { return newBwrap(t, conformanceLimits) })
}

func TestBwrapConfigValidate(t *testing.T) {
	t.Parallel()
	tests := map[string]BwrapConfig{
		"relative root":            {Tree: Tree{Root: "data"}},
		"root under /usr":          {Tree: Tree{Root: "/usr/local/agentplane"}},
		"root is /":                {Tree: Tree{Root: "/"}},
		"missing binary":           {Tree: Tree{Root: "/srv/x"}, BwrapPath: "/nonexistent/bwrap"},
		"extra bind over the tree": {Tree: Tree{Root: "/srv/x"}, ExtraROBinds: []string{"/srv"}},
	}
	for name, cfg := range tests {
		require.Error(t, cfg.WithDefaults().Validate(), name)
	}
}

// TestBwrapAdoptsServerFiles: files put in a thread's tree by the server
// itself (uploads written directly, a tree from before a restart) become
// the sandbox identity's on acquire, so commands can change them.
func TestBwrapAdoptsServerFiles(t *testing.T) {
	t.Parallel()
	p := newBwrap(t, conformanceLimits)
	tenant, thread := uuid.New(), uuid.New()
	tt := p.cfg.Tree.Thread(tenant, thread)
	require.NoError(t, tt.Ensure(-1, -1))
	up := filepath.Join(tt.UserDataDir(), "uploads", "in")
	require.NoError(t, os.MkdirAll(up, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(up, "data.csv"), []byte("a\n"), 0o600))

	id, err := p.Acquire(t.Context(), tenant, thread, AcquireOptions{})
	require.NoError(t, err)
	res, err := p.Exec(t.Context(), id, ExecRequest{Command: "echo b >> /mnt/user-data/uploads/in/data.csv && cat /mnt/user-data/uploads/in/data.csv"})
	require.NoError(t, err)
	require.Equal(t, "a\nb\n", res.Output)
}

func TestBwrapWarmPool(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	p, err := NewBwrap(BwrapConfig{Tree: Tree{Root: bwrapTreeRoot(t)}, Limits: conformanceLimits, WarmPoolSize: 1})
	require.NoError(t, err)
	t.Log(p.Mechanism())
	ctx := t.Context()
	tenant := uuid.New()
	a, err := p.Acquire(ctx, tenant, uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	b, err := p.Acquire(ctx, tenant, uuid.New(), AcquireOptions{})
	require.NoError(t, err)
	aBox, err := p.boxes.get(a)
	require.NoError(t, err)
	cg := aBox.extra.(*bwrapBox).cg

	require.NoError(t, p.Release(ctx, a))
	_, err = p.Exec(ctx, a, ExecRequest{Command: "true"})
	require.NoError(t, err, "an idle sandbox stays usable")
	require.NoError(t, p.Release(ctx, b))
	_, err = p.Exec(ctx, a, ExecRequest{Command: "true"})
	require.ErrorIs(t, err, ErrNotFound, "least recently used idle sandbox evicted beyond WarmPoolSize")
	_, err = p.Exec(ctx, b, ExecRequest{Command: "true"})
	require.NoError(t, err)
	if cg != nil {
		for _, dir := range cg.dirs() {
			require.NoDirExists(t, dir, "evicted sandbox's cgroup removed")
		}
	}
	require.NoError(t, p.Stop(ctx))
	_, err = p.Exec(ctx, b, ExecRequest{Command: "true"})
	require.ErrorIs(t, err, ErrNotFound)
}
