package sandbox

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestCleanPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		err      error
	}{
		{in: "notes.md", want: "/mnt/user-data/workspace/notes.md"},
		{in: "./a/../b.txt", want: "/mnt/user-data/workspace/b.txt"},
		{in: "../outputs/r.md", want: "/mnt/user-data/outputs/r.md"},
		{in: "/mnt/user-data/uploads/x.csv", want: "/mnt/user-data/uploads/x.csv"},
		{in: "/mnt/user-data/", want: "/mnt/user-data"},
		{in: "/mnt/skills//pdf/SKILL.md", want: "/mnt/skills/pdf/SKILL.md"},
		{in: "/mnt/skills", want: "/mnt/skills"},
		{in: "", err: ErrPathRefused},
		{in: "../../../etc/passwd", err: ErrPathRefused},
		{in: "/mnt/user-data/../../etc/passwd", err: ErrPathRefused},
		{in: "/mnt/user-data/workspace/../../../proc/self/root/etc/passwd", err: ErrPathRefused},
		{in: "/etc/passwd", err: ErrPathRefused},
		{in: "/proc/self/root/etc/passwd", err: ErrPathRefused},
		{in: "/mnt", err: ErrPathRefused},
		{in: "/mnt/user-datax/a", err: ErrPathRefused},
		{in: "/mnt/skillsx", err: ErrPathRefused},
		{in: "/tmp/x", err: ErrPathRefused},
		{in: "a\x00b", err: ErrPathRefused},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := CleanPath(tc.in)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestWritable(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"/mnt/user-data/workspace/a": true,
		"/mnt/user-data/outputs/d/e": true,
		"/mnt/user-data/uploads/u":   true,
		"/mnt/user-data/workspace":   false,
		"/mnt/user-data":             false,
		"/mnt/user-data/other":       false,
		"/mnt/skills/x":              false,
	}
	for p, want := range tests {
		require.Equal(t, want, Writable(p), p)
	}
}

// FuzzCleanPath checks the normalizer's invariants: an accepted path is
// absolute, clean, free of "..", inside one mount, and a fixed point.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a", "../x", "/mnt/user-data/workspace/../../etc", "/mnt/skills/..", "//mnt//skills", "/proc/self/root", "\x00", "..", "/mnt/user-data/./outputs/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := CleanPath(in)
		if err != nil {
			require.ErrorIs(t, err, ErrPathRefused)
			return
		}
		require.True(t, strings.HasPrefix(got, "/"))
		require.Equal(t, path.Clean(got), got)
		require.NotContains(t, strings.Split(got, "/"), "..")
		require.True(t, isUnder(got, UserData) || isUnder(got, Skills), got)
		again, err := CleanPath(got)
		require.NoError(t, err)
		require.Equal(t, got, again)
		if Writable(got) {
			require.True(t, isUnder(got, UserData))
		}
	})
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tt := Tree{Root: t.TempDir()}.Thread(uuid.New(), uuid.New())
	require.NoError(t, tt.Ensure(-1, -1))
	ws := filepath.Join(tt.UserDataDir(), "workspace")
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(ws, "passwd")))
	require.NoError(t, os.Symlink("../outputs", filepath.Join(ws, "out")))

	got, err := tt.Resolve("a/b.txt")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ws, "a", "b.txt"), got)

	got, err = tt.Resolve("/mnt/skills/pdf")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(tt.SkillsDir(), "pdf"), got)

	_, err = tt.Resolve("out")
	require.NoError(t, err, "a symlink inside the tree is fine")

	for _, bad := range []string{"passwd", "/etc/passwd", "../../x", "/proc/self/root/etc"} {
		_, err = tt.Resolve(bad)
		require.ErrorIs(t, err, ErrPathRefused, bad)
	}
}

// TestEscapeMessage pins the os.Root error text isEscape matches.
func TestEscapeMessage(t *testing.T) {
	t.Parallel()
	root, err := os.OpenRoot(t.TempDir())
	require.NoError(t, err)
	defer root.Close()
	_, err = root.Open("../x")
	require.True(t, isEscape(err), "os.Root escape error changed: %v", err)
}

func TestEnsurePermissions(t *testing.T) {
	t.Parallel()
	tt := Tree{Root: filepath.Join(t.TempDir(), "data")}.Thread(uuid.New(), uuid.New())
	require.NoError(t, tt.Ensure(-1, -1))
	for _, sub := range []string{"uploads", "workspace", "outputs"} {
		info, err := os.Stat(filepath.Join(tt.UserDataDir(), sub))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o750), info.Mode().Perm())
	}
	info, err := os.Stat(filepath.Dir(tt.Dir()))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	require.NoError(t, tt.Ensure(-1, -1), "idempotent")
}
