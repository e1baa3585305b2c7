package devpg_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/devpg"
)

// TestCluster is the package's only test that starts PostgreSQL: its
// subtests run in order on one data directory (start, stop, restart), then
// exercise how the server binaries are found.
func TestCluster(t *testing.T) {
	requireServerEnvironment(t)
	ctx := t.Context()
	dataDir := t.TempDir()
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	pgVersion := filepath.Join(dataDir, "postgres", "PG_VERSION")
	require.False(t, devpg.Answers(addr), "port %d is already taken", port)

	var firstInit time.Time
	t.Run("start initializes and serves", func(t *testing.T) {
		c := startOn(t, dataDir, port)
		u, err := url.Parse(c.URL)
		require.NoError(t, err)
		require.Equal(t, addr, u.Host)
		require.Equal(t, "/agentplane", u.Path)

		conn := connect(t, c.URL)
		var one int
		require.NoError(t, conn.QueryRow(ctx, `SELECT 1`).Scan(&one))
		require.Equal(t, 1, one)
		var dir string
		require.NoError(t, conn.QueryRow(ctx, `SHOW data_directory`).Scan(&dir))
		require.Equal(t, filepath.Join(dataDir, "postgres"), dir)
		// A marker that only survives if the restart reuses this cluster.
		_, err = conn.Exec(ctx, `CREATE DATABASE devpg_marker`)
		require.NoError(t, err)

		fi, err := os.Stat(pgVersion)
		require.NoError(t, err)
		firstInit = fi.ModTime()

		require.NoError(t, c.Stop(ctx))
		require.False(t, devpg.Answers(addr), "port still answers after Stop")
	})

	t.Run("restart reuses the data directory", func(t *testing.T) {
		require.False(t, firstInit.IsZero(), "first start did not complete")
		c := startOn(t, dataDir, port)
		fi, err := os.Stat(pgVersion)
		require.NoError(t, err)
		require.Equal(t, firstInit, fi.ModTime(), "PG_VERSION rewritten: initdb ran again")

		var exists bool
		require.NoError(t, connect(t, c.URL).QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'devpg_marker')`).Scan(&exists))
		require.True(t, exists, "database created before the restart is gone")

		require.NoError(t, c.Stop(ctx))
		require.False(t, devpg.Answers(addr), "port still answers after Stop")
	})

	t.Run("binaries on PATH come first", func(t *testing.T) {
		// A fake initdb/pg_ctl pair ahead of the real ones must be the pair used.
		bin := traversableDir(t)
		for _, tool := range []string{"initdb", "pg_ctl"} {
			script := "#!/bin/sh\necho fake " + tool + " >&2\nexit 3\n"
			require.NoError(t, os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755))
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		_, err := devpg.StartOn(ctx, t.TempDir(), port)
		require.ErrorContains(t, err, "fake initdb")
	})

	t.Run("falls back to the Debian layout", func(t *testing.T) {
		t.Setenv("PATH", pathWithout(os.Getenv("PATH"), "initdb"))
		debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		if len(debian) == 0 {
			_, err := devpg.StartOn(ctx, t.TempDir(), port)
			require.ErrorIs(t, err, devpg.ErrNoBinaries)
			return
		}
		c := startOn(t, t.TempDir(), port)
		require.NoError(t, connect(t, c.URL).Ping(ctx))
		require.NoError(t, c.Stop(ctx))
		require.False(t, devpg.Answers(addr), "port still answers after Stop")
	})
}

// requireServerEnvironment skips (fails under CI) when this machine cannot run
// a private cluster: no server binaries, or root without a postgres user.
func requireServerEnvironment(t *testing.T) {
	t.Helper()
	skip := func(reason string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	onPath := pathWithout(os.Getenv("PATH"), "initdb") != os.Getenv("PATH")
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if !onPath && len(debian) == 0 {
		skip(devpg.ErrNoBinaries.Error())
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			skip("running as root needs a postgres OS user: " + err.Error())
		}
	}
}

// startOn starts a cluster and stops it when the test ends if the test did
// not (a failed assertion must not leave a server behind).
func startOn(t *testing.T, dataDir string, port int) *devpg.Cluster {
	t.Helper()
	c, err := devpg.StartOn(t.Context(), dataDir, port)
	if errors.Is(err, devpg.ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t.Cleanup(func() {
		if devpg.Answers(addr) {
			_ = c.Stop(context.Background())
		}
	})
	return c
}

// connect opens a connection to the cluster's maintenance database; the
// agentplane database in the cluster URL is created later by serve.
func connect(t *testing.T, clusterURL string) *pgx.Conn {
	t.Helper()
	u, err := url.Parse(clusterURL)
	require.NoError(t, err)
	u.Path = "/postgres"
	conn, err := pgx.Connect(t.Context(), u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// traversableDir is a temp dir the postgres OS user can enter and read, for
// scripts run through runuser when the test runs as root.
func traversableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		if fi.Mode().Perm()&0o001 == 0 {
			require.NoError(t, os.Chmod(d, fi.Mode().Perm()|0o011))
		}
	}
	return dir
}

// pathWithout drops the PATH entries that hold tool.
func pathWithout(path, tool string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(d, tool)); err != nil {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}
