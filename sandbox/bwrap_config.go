package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// BwrapConfig configures the bubblewrap provider.
type BwrapConfig struct {
	// Tree is the host layout of thread files and skills. Its Root must not
	// lie inside a system directory the sandbox mounts (systemBinds).
	Tree Tree
	// Limits bound every command; zero fields take the package defaults.
	Limits Limits
	// Env is the environment policy (passthrough names).
	Env EnvPolicy
	// BwrapPath is the bubblewrap binary; default /usr/bin/bwrap.
	BwrapPath string
	// PrlimitPath is util-linux prlimit, which applies the rlimits;
	// default /usr/bin/prlimit.
	PrlimitPath string
	// RunAsUID and RunAsGID are the identity commands run as when the
	// server runs as root (it never runs them as root); default 65534
	// (nobody). Thread directories are chowned to it. Use a dedicated,
	// otherwise unused uid in production: every process of that uid on
	// the host counts against RLIMIT_NPROC when the pids cgroup is not
	// available, and host processes of that uid could read thread files.
	// Ignored when the server is not root (commands run as the server's
	// uid, which the user namespace maps to itself).
	RunAsUID, RunAsGID int
	// WarmPoolSize is how many released sandboxes are kept for reuse;
	// beyond it the least recently used are torn down. Default 32.
	WarmPoolSize int
	// MaxFileBytes caps one file a command writes (RLIMIT_FSIZE); default
	// 1 GiB.
	MaxFileBytes int64
	// TmpBytes is the size of the private /tmp; default 256 MiB.
	TmpBytes int64
	// ExtraROBinds are more host directories mounted read-only at the same
	// path (a language runtime in /opt, say). Never the data directory.
	ExtraROBinds []string
	// DisableCgroups forces rlimits even where cgroups are writable.
	DisableCgroups bool
}

// WithDefaults fills zero fields.
func (c BwrapConfig) WithDefaults() BwrapConfig {
	c.Limits = c.Limits.WithDefaults()
	if c.BwrapPath == "" {
		c.BwrapPath = "/usr/bin/bwrap"
	}
	if c.PrlimitPath == "" {
		c.PrlimitPath = "/usr/bin/prlimit"
	}
	if c.RunAsUID == 0 {
		c.RunAsUID = 65534
	}
	if c.RunAsGID == 0 {
		c.RunAsGID = 65534
	}
	if c.WarmPoolSize == 0 {
		c.WarmPoolSize = 32
	}
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = 1 << 30
	}
	if c.TmpBytes == 0 {
		c.TmpBytes = 256 << 20
	}
	return c
}

// Validate reports a configuration the provider cannot run safely with.
func (c BwrapConfig) Validate() error {
	if !filepath.IsAbs(c.Tree.Root) {
		return fmt.Errorf("bwrap: tree root %q must be absolute", c.Tree.Root)
	}
	if c.RunAsUID <= 0 || c.RunAsGID <= 0 {
		return errors.New("bwrap: RunAsUID and RunAsGID must not be root")
	}
	for _, bin := range []string{c.BwrapPath, c.PrlimitPath} {
		info, err := os.Stat(bin)
		if err != nil {
			return fmt.Errorf("bwrap: %w", err)
		}
		if info.Mode()&0o111 == 0 {
			return fmt.Errorf("bwrap: %s is not executable", bin)
		}
	}
	root := filepath.Clean(c.Tree.Root)
	if root == "/" {
		return errors.New("bwrap: tree root must not be /")
	}
	for _, src := range append(systemBindSources(), c.ExtraROBinds...) {
		if src = filepath.Clean(src); root == src || strings.HasPrefix(root, src+"/") || strings.HasPrefix(src, root+"/") {
			return fmt.Errorf("bwrap: tree root %s overlaps the mounted %s", root, src)
		}
	}
	return nil
}

// runAs is the identity commands run as, or nil to keep the server's.
func (c BwrapConfig) runAs() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: uint32(c.RunAsUID), Gid: uint32(c.RunAsGID), Groups: []uint32{}}
}

// checkReachable tells, before the first command fails obscurely, when
// the sandbox identity cannot reach dir: bubblewrap runs as that identity
// and resolves bind sources with its permissions.
func checkReachable(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		perm := info.Mode().Perm()
		ok := perm&0o001 != 0 ||
			(st != nil && st.Uid == cred.Uid && perm&0o100 != 0) ||
			(st != nil && st.Gid == cred.Gid && perm&0o010 != 0)
		if !ok {
			return fmt.Errorf("bwrap: uid %d cannot reach %s: %s needs the search bit (chmod o+x)", cred.Uid, dir, d)
		}
		if d == "/" {
			return nil
		}
	}
}
