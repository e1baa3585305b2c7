package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The sandbox's root is an empty tmpfs that bubblewrap builds and that is
// made read-only once every mount is in place. Only what is listed here is
// added, so the server's data directory, other tenants' threads, /root,
// /home, /work, /run and /var are absent rather than masked: a new host
// directory is invisible by default, where a read-only bind of / would
// show it until someone remembered to hide it.

// systemDirs are mounted read-only at the same path (or, when the host has
// merged /usr, recreated as the same symlinks).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries are the parts of the host's /etc programs need to run (the
// loader cache, alternatives symlinks, TLS roots, time zone, MIME and
// protocol tables). Host users, host names and everything else in /etc
// stay out; passwd, group and hosts are synthetic. They are copied into a
// snapshot at start-up (buildEtc).
var etcEntries = []string{
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki",
	"/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf", "/etc/mime.types",
	"/etc/protocols", "/etc/services", "/etc/os-release", "/etc/debian_version",
	"/etc/python3", "/etc/perl", "/etc/magic", "/etc/gai.conf",
}

// networkEtc is added only for sandboxes with network.
var networkEtc = []string{"/etc/resolv.conf"}

func systemBindSources() []string {
	return append(append(append([]string{}, systemDirs...), etcEntries...), networkEtc...)
}

// buildEtc snapshots etcEntries (world-readable parts only, so nothing a
// root-only file holds, like /etc/ssl/private, is ever copied) and the
// synthetic files into a fresh directory under systemDir, points the
// symlink systemDir/etc at it atomically, and removes older snapshots.
// One read-only bind of the snapshot replaces some twenty binds of single
// host files: every mount bubblewrap makes costs time on every command.
// The snapshot is taken at start-up; a restart picks up host changes.
func buildEtc(systemDir string, uid, gid int) (string, error) {
	if err := os.MkdirAll(systemDir, 0o755); err != nil {
		return "", fmt.Errorf("etc snapshot: %w", err)
	}
	if err := os.Chmod(systemDir, 0o755); err != nil {
		return "", fmt.Errorf("etc snapshot: %w", err)
	}
	snap, err := os.MkdirTemp(systemDir, "etc-")
	if err != nil {
		return "", fmt.Errorf("etc snapshot: %w", err)
	}
	if err := fillEtc(snap, uid, gid); err != nil {
		_ = os.RemoveAll(snap)
		return "", fmt.Errorf("etc snapshot: %w", err)
	}
	link := filepath.Join(systemDir, "etc")
	tmp := link + ".new-" + filepath.Base(snap)
	if err := os.Symlink(filepath.Base(snap), tmp); err != nil {
		return "", fmt.Errorf("etc snapshot: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return "", fmt.Errorf("etc snapshot: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(systemDir, "etc-*"))
	for _, dir := range old {
		if dir != snap {
			_ = os.RemoveAll(dir)
		}
	}
	return link, nil
}

func fillEtc(snap string, uid, gid int) error {
	if err := os.Chmod(snap, 0o755); err != nil {
		return err
	}
	for _, entry := range etcEntries {
		if err := copyWorldReadable(entry, filepath.Join(snap, strings.TrimPrefix(entry, "/etc/"))); err != nil {
			return err
		}
	}
	u, g := strconv.Itoa(uid), strconv.Itoa(gid)
	if uid < 0 {
		u, g = strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
			"sandbox:x:" + u + ":" + g + ":sandbox:" + Workspace + ":/bin/sh\n",
		"group": "root:x:0:\nsandbox:x:" + g + ":\n",
		"hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		// Mount point for the host's resolver, bound only with network.
		"resolv.conf": "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(snap, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyWorldReadable copies src (file, symlink or directory tree) to dst,
// keeping symlinks as they are and leaving out anything others may not
// read. A missing src is not an error.
func copyWorldReadable(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		target := filepath.Join(dst, strings.TrimPrefix(p, src))
		switch mode := info.Mode(); {
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case mode.IsDir():
			if mode.Perm()&0o005 != 0o005 {
				return fs.SkipDir
			}
			return os.Mkdir(target, 0o755)
		case mode.IsRegular() && mode.Perm()&0o004 != 0:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return nil
	})
}

// mountArgs are bubblewrap's arguments for one command in box b: the
// namespaces, the read-only system, the thread's three writable folders,
// the read-only skills, then the root made read-only.
func (p *Bwrap) mountArgs(b *box, network bool) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--hostname", "sandbox",
	}
	if network {
		a = append(a, "--share-net")
	}
	for _, dir := range systemDirs {
		info, err := os.Lstat(dir)
		switch {
		case err != nil:
		case info.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				a = append(a, "--symlink", target, dir)
			}
		case info.IsDir():
			a = append(a, "--ro-bind", dir, dir)
		}
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.FormatInt(p.cfg.TmpBytes, 10), "--tmpfs", "/tmp",
		"--size", strconv.FormatInt(p.cfg.TmpBytes, 10), "--tmpfs", "/dev/shm",
		"--ro-bind", p.etcDir, "/etc",
	)
	if network {
		for _, e := range networkEtc {
			a = append(a, "--ro-bind-try", e, e)
		}
	}
	for _, dir := range p.cfg.ExtraROBinds {
		a = append(a, "--ro-bind-try", dir, dir)
	}
	if _, err := os.Stat(b.tree.SkillsDir()); err == nil {
		a = append(a, "--ro-bind", b.tree.SkillsDir(), Skills)
	} else {
		a = append(a, "--dir", Skills)
	}
	ud := b.tree.UserDataDir()
	a = append(a,
		"--bind", filepath.Join(ud, "uploads"), Uploads,
		"--bind", filepath.Join(ud, "workspace"), Workspace,
		"--bind", filepath.Join(ud, "outputs"), Outputs,
		"--remount-ro", "/",
		"--chdir", Workspace,
	)
	return a
}
