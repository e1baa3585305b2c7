// Package devpg starts a private PostgreSQL cluster for development when no
// server answers: initdb under a data directory, run as an unprivileged OS
// user when we are root (initdb refuses root), and stop it on exit.
//
// It is plumbing for `serve --dev` only; production never uses it.
package devpg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Port is the private cluster's port; not 5432, so it never shadows a
// system server that is merely slow to start.
const Port = 54329

// Cluster is a running private cluster.
type Cluster struct {
	dir   string
	bin   string
	runAs string
	URL   string
}

// ErrNoBinaries means PostgreSQL server binaries are not installed.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found (install the postgresql package, or set AGENTPLANE_DATABASE_URL)")

// Start initializes (once) and starts a cluster in dataDir/postgres on Port.
func Start(ctx context.Context, dataDir string) (*Cluster, error) {
	return StartOn(ctx, dataDir, Port)
}

// StartOn is Start on a chosen port, so tests need not contend for Port.
func StartOn(ctx context.Context, dataDir string, port int) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: filepath.Join(dataDir, "postgres"), bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		if _, err := user.Lookup(c.runAs); err != nil {
			return nil, fmt.Errorf("running as root needs the %q OS user to own the cluster: %w", c.runAs, err)
		}
	}
	if err := c.init(ctx); err != nil {
		return nil, err
	}
	if err := c.run(ctx, "pg_ctl", "-D", c.dir, "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "30",
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s", port, c.dir), "start"); err != nil {
		return nil, fmt.Errorf("start private postgres (log: %s): %w", filepath.Join(c.dir, "server.log"), err)
	}
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/agentplane?sslmode=disable", port)
	return c, nil
}

func (c *Cluster) init(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dir, "PG_VERSION")); err == nil {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", c.dir, err)
	}
	if c.runAs != "" {
		u, _ := user.Lookup(c.runAs)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", c.dir, err)
		}
		// The postgres user must be able to reach the directory.
		for d := filepath.Dir(c.dir); d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
				_ = os.Chmod(d, fi.Mode().Perm()|0o011)
			}
		}
	}
	if err := c.run(ctx, "initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8"); err != nil {
		return fmt.Errorf("initdb %s: %w", c.dir, err)
	}
	return nil
}

// Stop shuts the cluster down quickly.
func (c *Cluster) Stop(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.dir, "-m", "fast", "-w", "stop")
}

func (c *Cluster) run(ctx context.Context, tool string, args ...string) error {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", tool, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// findBin locates a directory holding initdb and pg_ctl: PATH first, then
// Debian's versioned directories (newest first).
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", ErrNoBinaries
}

// Answers reports whether something accepts TCP connections at addr.
func Answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
