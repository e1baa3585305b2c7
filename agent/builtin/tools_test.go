package builtin_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent/builtin"
	"github.com/agentplane/agentplane/agent/tools"
)

func TestToolsSchemasAndGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	ts, err := e.source.Tools(t.Context(), tools.Scope{})
	require.NoError(t, err)
	want := map[string][]string{
		"bash":          {"command", "timeout_seconds"},
		"read_file":     {"path", "offset", "limit"},
		"write_file":    {"path", "content", "append"},
		"edit_file":     {"path", "old_string", "new_string"},
		"ls":            {"path"},
		"glob":          {"pattern", "path"},
		"grep":          {"pattern", "path", "glob"},
		"present_files": {"paths"},
	}
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Name)
		var sc struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(tl.Parameters, &sc))
		require.Equal(t, "object", sc.Type)
		require.NotNil(t, sc.AdditionalProperties)
		require.False(t, *sc.AdditionalProperties, tl.Name)
		var props []string
		for p := range sc.Properties {
			props = append(props, p)
		}
		require.ElementsMatch(t, want[tl.Name], props, tl.Name)
		require.NotEmpty(t, tl.Description)
		group := "sandbox"
		if tl.Name == "present_files" {
			group = "builtin"
		}
		require.Equal(t, group, tl.Group, tl.Name)
	}
	require.Equal(t, []string{"bash", "read_file", "write_file", "edit_file", "ls", "glob", "grep", "present_files"}, names)
	require.Equal(t, "builtin", e.source.Name())

	_, err = e.call("ls", m{"path": "/mnt/user-data", "recursive": true})
	require.ErrorContains(t, err, `unknown argument "recursive"`)
	_, err = e.call("read_file", m{"path": "x", "offset": "first"})
	require.ErrorContains(t, err, `argument "offset" must be of type integer`)

	// Without a sandbox manager there are no sandbox tools (nor present_files).
	none, err := builtin.New(nil, nil, builtin.Config{}).Tools(t.Context(), tools.Scope{})
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestSandboxIsAcquiredLazily(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	count := func() (n int) {
		require.NoError(t, pool(t).QueryRow(t.Context(), `SELECT count(*) FROM sandboxes WHERE tenant_id = $1 AND thread_id = $2`, e.access.Tenant.ID, e.thread.ID).Scan(&n))
		return n
	}
	require.Zero(t, count(), "listing tools acquires nothing")
	e.ok("ls", m{"path": "/mnt/user-data"})
	require.Equal(t, 1, count())
	e.ok("bash", m{"command": "true"})
	require.Equal(t, 1, count(), "later calls reuse the thread's sandbox")
}

func TestBash(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{onHost, onBwrap} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testBash(t, newEnvOn(t, builtin.Config{}, kind))
		})
	}
}

func testBash(t *testing.T, e *env) {
	out := e.ok("bash", m{"command": "echo out; echo err >&2; pwd; exit 3"})
	require.Contains(t, out, "out\n")
	require.Contains(t, out, "err\n")
	require.Contains(t, out, "/mnt/user-data/workspace\n", "commands start in the workspace, shown by virtual path")
	require.True(t, strings.HasSuffix(out, "[exit code: 3]"), out)

	out = e.ok("bash", m{"command": "echo hi > /mnt/user-data/outputs/hi.txt && cat /mnt/user-data/outputs/hi.txt"})
	require.Equal(t, "hi\n[exit code: 0]", out)
	require.Equal(t, "hi\n", e.ok("read_file", m{"path": "/mnt/user-data/outputs/hi.txt"}))

	out = e.ok("bash", m{"command": "true"})
	require.Equal(t, "(no output)\n[exit code: 0]", out)

	out = e.ok("bash", m{"command": "echo started; sleep 10", "timeout_seconds": 1})
	require.Contains(t, out, "started")
	require.Contains(t, out, "killed: timeout")

	_, err := e.call("bash", m{"command": "  "})
	require.ErrorContains(t, err, "command must not be empty")
	_, err = e.call("bash", m{"command": "true", "timeout_seconds": 0})
	require.ErrorContains(t, err, "timeout_seconds must be at least 1")
}

func TestBashOutputBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	out := e.ok("bash", m{"command": "head -c 100000 /dev/zero | tr '\\0' x; echo"})
	require.LessOrEqual(t, len(out), 32<<10)
	require.Contains(t, out, "[truncated: ")
	require.Contains(t, out, " more bytes]")
	require.True(t, strings.HasSuffix(out, "[exit code: 0]"), "the status line survives truncation")
}

func TestWriteAndReadFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	require.Equal(t, "wrote 8 bytes to /mnt/user-data/workspace/notes.txt", e.ok("write_file", m{"path": "notes.txt", "content": "a\nb\nc\nd\n"}))
	require.Equal(t, "a\nb\nc\nd\n", e.ok("read_file", m{"path": "/mnt/user-data/workspace/notes.txt"}))
	require.Equal(t, "b\nc\n[lines 2-3 of 4; use offset and limit to read more]", e.ok("read_file", m{"path": "notes.txt", "offset": 2, "limit": 2}))
	require.Equal(t, "d\n[lines 4-4 of 4; use offset and limit to read more]", e.ok("read_file", m{"path": "notes.txt", "offset": 4}))
	require.Equal(t, "a\n[lines 1-1 of 4; use offset and limit to read more]", e.ok("read_file", m{"path": "notes.txt", "limit": 1}))

	_, err := e.call("read_file", m{"path": "notes.txt", "offset": 5})
	require.ErrorContains(t, err, "offset 5 is past the end of notes.txt, which has 4 lines")
	_, err = e.call("read_file", m{"path": "notes.txt", "offset": 0})
	require.ErrorContains(t, err, "offset must be at least 1")
	_, err = e.call("read_file", m{"path": "notes.txt", "limit": 0})
	require.ErrorContains(t, err, "limit must be at least 1")
	_, err = e.call("read_file", m{"path": "missing.txt"})
	require.ErrorContains(t, err, "no such file")

	// Append, creating parents on the way.
	e.ok("write_file", m{"path": "/mnt/user-data/outputs/deep/log.txt", "content": "one\n"})
	require.Equal(t, "appended 4 bytes to /mnt/user-data/outputs/deep/log.txt", e.ok("write_file", m{"path": "/mnt/user-data/outputs/deep/log.txt", "content": "two\n", "append": true}))
	require.Equal(t, "one\ntwo\n", e.ok("read_file", m{"path": "/mnt/user-data/outputs/deep/log.txt"}))
	e.ok("write_file", m{"path": "/mnt/user-data/outputs/deep/log.txt", "content": "fresh"})
	require.Equal(t, "fresh", e.ok("read_file", m{"path": "/mnt/user-data/outputs/deep/log.txt"}))

	e.ok("write_file", m{"path": "empty.txt", "content": ""})
	require.Equal(t, "(empty file)", e.ok("read_file", m{"path": "empty.txt"}))
	e.ok("bash", m{"command": "printf 'a\\000b' > bin.dat"})
	require.Contains(t, e.ok("read_file", m{"path": "bin.dat"}), "binary file (3 bytes)")

	_, err = e.call("write_file", m{"path": "/mnt/skills/evil.md", "content": "x"})
	require.ErrorContains(t, err, "read-only")
	_, err = e.call("write_file", m{"path": "/etc/passwd", "content": "x"})
	require.ErrorContains(t, err, "path refused")
	_, err = e.call("write_file", m{"path": "../../../etc/x", "content": "x"})
	require.ErrorContains(t, err, "path refused")
	_, err = e.call("read_file", m{"path": "/proc/self/environ"})
	require.ErrorContains(t, err, "path refused")
}

func TestReadFileTruncated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{MaxOutputBytes: 1024})
	line := strings.Repeat("é", 99) + "\n" // 199 bytes, multibyte
	e.ok("write_file", m{"path": "big.txt", "content": strings.Repeat(line, 20)})
	out := e.ok("read_file", m{"path": "big.txt"})
	body, marker, ok := strings.Cut(out, "\n[truncated: ")
	require.True(t, ok, out)
	require.LessOrEqual(t, len(body), 1024)
	require.True(t, strings.HasPrefix(strings.Repeat(line, 20), body), "a prefix, cut on a character boundary")
	require.Equal(t, fmt.Sprintf("%d more bytes]", 20*len(line)-len(body)), marker)
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	e.ok("write_file", m{"path": "code.py", "content": "x = 1\ny = 1\nprint(x)\n"})

	_, err := e.call("edit_file", m{"path": "code.py", "old_string": "z = 1", "new_string": "z = 2"})
	require.ErrorContains(t, err, "old_string was not found in /mnt/user-data/workspace/code.py (0 matches)")
	_, err = e.call("edit_file", m{"path": "code.py", "old_string": " = 1", "new_string": " = 2"})
	require.ErrorContains(t, err, "old_string matches 2 times in /mnt/user-data/workspace/code.py")
	require.Equal(t, "x = 1\ny = 1\nprint(x)\n", e.ok("read_file", m{"path": "code.py"}), "a refused edit changes nothing")
	_, err = e.call("edit_file", m{"path": "code.py", "old_string": "", "new_string": "a"})
	require.ErrorContains(t, err, "old_string must not be empty")
	_, err = e.call("edit_file", m{"path": "code.py", "old_string": "x", "new_string": "x"})
	require.ErrorContains(t, err, "identical")
	_, err = e.call("edit_file", m{"path": "nope.py", "old_string": "a", "new_string": "b"})
	require.ErrorContains(t, err, "no such file")
	_, err = e.call("edit_file", m{"path": "/mnt/skills/x/SKILL.md", "old_string": "a", "new_string": "b"})
	require.ErrorContains(t, err, "read-only")

	require.Equal(t, "edited /mnt/user-data/workspace/code.py: replaced 1 occurrence",
		e.ok("edit_file", m{"path": "code.py", "old_string": "y = 1\n", "new_string": "y = 2\n"}))
	require.Equal(t, "x = 1\ny = 2\nprint(x)\n", e.ok("read_file", m{"path": "code.py"}))
}

func TestLs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	require.Equal(t, "/mnt/user-data:\noutputs/\nuploads/\nworkspace/", e.ok("ls", m{"path": "/mnt/user-data"}))
	require.Equal(t, "/mnt/user-data/outputs: (empty directory)", e.ok("ls", m{"path": "/mnt/user-data/outputs"}))
	e.ok("write_file", m{"path": "src/main.go", "content": "package main\n"})
	e.ok("write_file", m{"path": "README.md", "content": "hi"})
	require.Equal(t, "/mnt/user-data/workspace:\nREADME.md  2 bytes\nsrc/", e.ok("ls", m{"path": "."}))
	require.Equal(t, "/mnt/user-data/workspace/README.md  2 bytes", e.ok("ls", m{"path": "README.md"}))
	_, err := e.call("ls", m{"path": "nothing"})
	require.ErrorContains(t, err, "no such file")
	_, err = e.call("ls", m{"path": "/"})
	require.ErrorContains(t, err, "path refused")
}

func TestGlob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{MaxMatches: 3})
	for _, p := range []string{"src/a.go", "src/sub/b.go", "src/sub/deeper/c.go", "c.txt", "src/d.go"} {
		e.ok("write_file", m{"path": p, "content": "x"})
	}
	e.ok("write_file", m{"path": "/mnt/user-data/outputs/e.go", "content": "x"})
	w := "/mnt/user-data/workspace/"
	require.Equal(t, w+"src/a.go\n"+w+"src/d.go\n"+w+"src/sub/b.go\n[truncated: 1 more matching files; narrow the pattern]",
		e.ok("glob", m{"pattern": "**/*.go", "path": "/mnt/user-data/workspace"}))
	require.Equal(t, w+"src/a.go\n"+w+"src/d.go", e.ok("glob", m{"pattern": "*.go", "path": "src"}))
	require.Equal(t, w+"src/sub/b.go\n"+w+"src/sub/deeper/c.go", e.ok("glob", m{"pattern": "sub/**/*.go", "path": "src"}))
	require.Equal(t, w+"src/sub/deeper/c.go", e.ok("glob", m{"pattern": "/mnt/user-data/**/deeper/*.go"}))
	require.Equal(t, "/mnt/user-data/outputs/e.go", e.ok("glob", m{"pattern": "outputs/*.go"}), "default root is /mnt/user-data")
	require.Equal(t, w+"c.txt", e.ok("glob", m{"pattern": "*.{txt,md}", "path": "."}))
	require.Equal(t, `no files match "*.rs" under /mnt/user-data/workspace`, e.ok("glob", m{"pattern": "*.rs", "path": "."}))
	_, err := e.call("glob", m{"pattern": "[", "path": "."})
	require.ErrorContains(t, err, "invalid glob pattern")
	_, err = e.call("glob", m{"pattern": "*", "path": "/etc"})
	require.ErrorContains(t, err, "path refused")
}

func TestGrep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{})
	e.ok("write_file", m{"path": "src/a.go", "content": "package a\n\nfunc Alpha() {}\nfunc beta() {}\n"})
	e.ok("write_file", m{"path": "src/sub/b.go", "content": "package sub\nfunc Gamma() {}\r\n"})
	e.ok("write_file", m{"path": "notes.md", "content": "func in prose\n"})
	e.ok("bash", m{"command": "printf 'func \\000 binary' > src/blob.go"})
	w := "/mnt/user-data/workspace/"

	require.Equal(t,
		w+"src/a.go:3: func Alpha() {}\n"+w+"src/a.go:4: func beta() {}\n"+w+"src/sub/b.go:2: func Gamma() {}",
		e.ok("grep", m{"pattern": `^func \w+`, "glob": "*.go"}), "glob without / filters names; binary files skipped")
	require.Equal(t, w+"notes.md:1: func in prose", e.ok("grep", m{"pattern": "func", "glob": "*.md", "path": "."}))
	require.Equal(t, w+"src/sub/b.go:2: func Gamma() {}", e.ok("grep", m{"pattern": "func", "path": "src", "glob": "sub/**"}))
	require.Equal(t, w+"src/a.go:3: func Alpha() {}", e.ok("grep", m{"pattern": "(?i)ALPHA", "path": "src/a.go"}), "a file as path")
	require.Equal(t, `no matches for "zeta" under /mnt/user-data`, e.ok("grep", m{"pattern": "zeta"}))

	_, err := e.call("grep", m{"pattern": "(unclosed"})
	require.ErrorContains(t, err, "invalid pattern")
	_, err = e.call("grep", m{"pattern": "x", "glob": "["})
	require.ErrorContains(t, err, "invalid glob")
}

func TestGrepBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, builtin.Config{MaxMatches: 5})
	e.ok("write_file", m{"path": "many.txt", "content": strings.Repeat("hit\n", 50)})
	e.ok("write_file", m{"path": "long.txt", "content": "hit " + strings.Repeat("y", 1000) + "\n"})
	out := e.ok("grep", m{"pattern": "hit", "glob": "many.txt"})
	require.Equal(t, 5+1, len(strings.Split(out, "\n")), "five matches and the marker: %s", out)
	require.True(t, strings.HasSuffix(out, "[truncated: stopped after 5 matches; narrow the pattern, path or glob]"), out)
	out = e.ok("grep", m{"pattern": "hit", "glob": "long.txt"})
	require.Contains(t, out, "[truncated: ", "long lines are cut")
	require.Less(t, len(out), 500)
}
