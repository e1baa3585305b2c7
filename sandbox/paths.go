package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/uuid"
)

// Tree is the host layout behind every sandbox:
//
//	<Root>/skills                                                 read-only, seen as /mnt/skills
//	<Root>/tenants/<tenant>/threads/<thread>/user-data/uploads    /mnt/user-data/uploads
//	<Root>/tenants/<tenant>/threads/<thread>/user-data/workspace  /mnt/user-data/workspace
//	<Root>/tenants/<tenant>/threads/<thread>/user-data/outputs    /mnt/user-data/outputs
//
// <Root>/system holds the bubblewrap provider's /etc snapshot. Files
// belong to the thread, not to a sandbox: destroying a sandbox keeps them,
// and a later sandbox for the same thread sees them again.
type Tree struct {
	Root string
}

// SkillsDir is the host directory mounted read-only at /mnt/skills. It may
// be empty or missing; then /mnt/skills is an empty directory.
func (t Tree) SkillsDir() string { return filepath.Join(t.Root, "skills") }

// Thread is one thread's part of the tree.
func (t Tree) Thread(tenantID, threadID uuid.UUID) ThreadTree {
	return ThreadTree{tree: t, TenantID: tenantID, ThreadID: threadID}
}

// ThreadTree maps one thread's virtual paths onto the host. Every file
// operation goes through an os.Root opened on the thread's user-data
// directory (or the skills directory), so neither "..", nor a symlink
// planted by a command, nor a racing rename can reach outside it.
type ThreadTree struct {
	tree     Tree
	TenantID uuid.UUID
	ThreadID uuid.UUID
}

// Dir is the thread's host directory.
func (t ThreadTree) Dir() string {
	return filepath.Join(t.tree.Root, "tenants", t.TenantID.String(), "threads", t.ThreadID.String())
}

// UserDataDir is the host directory seen as /mnt/user-data.
func (t ThreadTree) UserDataDir() string { return filepath.Join(t.Dir(), "user-data") }

// SkillsDir is the host directory seen as /mnt/skills.
func (t ThreadTree) SkillsDir() string { return t.tree.SkillsDir() }

// userDataSubdirs are the writable areas, relative to user-data.
var userDataSubdirs = []string{"uploads", "workspace", "outputs"}

// Ensure creates the thread's user-data tree. With uid >= 0 the thread
// directory and everything under it is chowned to uid:gid (the identity
// sandboxed commands run as) and the directories above it get only the
// search bit for others, so that identity can reach its bind-mount sources
// without being able to list other tenants or threads. With uid < 0 every
// created directory is private (0700/0750).
func (t ThreadTree) Ensure(uid, gid int) error {
	ancestorMode := os.FileMode(0o700)
	if uid >= 0 {
		ancestorMode = 0o711
	}
	ancestors := []string{
		t.tree.Root,
		filepath.Join(t.tree.Root, "tenants"),
		filepath.Join(t.tree.Root, "tenants", t.TenantID.String()),
		filepath.Join(t.tree.Root, "tenants", t.TenantID.String(), "threads"),
	}
	for _, dir := range ancestors {
		if err := ensureDir(dir, ancestorMode, uid >= 0); err != nil {
			return fmt.Errorf("ensure thread tree: %w", err)
		}
	}
	owned := []string{t.Dir(), t.UserDataDir()}
	for _, sub := range userDataSubdirs {
		owned = append(owned, filepath.Join(t.UserDataDir(), sub))
	}
	for _, dir := range owned {
		if err := ensureDir(dir, 0o750, false); err != nil {
			return fmt.Errorf("ensure thread tree: %w", err)
		}
		if uid >= 0 {
			if err := os.Lchown(dir, uid, gid); err != nil {
				return fmt.Errorf("ensure thread tree: %w", err)
			}
		}
	}
	return nil
}

// chownTree hands everything under the thread's user-data directory to
// uid:gid (files the server or an earlier process left owned by another
// identity would otherwise be read-only to commands). It works through
// os.Root, so a symlink swapped in mid-walk cannot redirect a chown
// outside the tree.
func (t ThreadTree) chownTree(uid, gid int) error {
	root, err := os.OpenRoot(t.UserDataDir())
	if err != nil {
		return fmt.Errorf("chown thread tree: %w", err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
			return nil
		}
		return root.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("chown thread tree: %w", err)
	}
	return nil
}

// ensureDir creates dir with mode when missing; with searchable it also
// adds the search bits to an existing directory.
func ensureDir(dir string, mode os.FileMode, searchable bool) error {
	err := os.Mkdir(dir, mode)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err == nil {
		return os.Chmod(dir, mode) // umask-proof
	}
	if !searchable {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if perm := info.Mode().Perm(); perm&0o011 != 0o011 {
		return os.Chmod(dir, perm|0o011)
	}
	return nil
}

// Resolve maps a virtual path to its host path inside this thread's tree,
// after CleanPath's checks and a check through os.Root that no symlink on
// the way leads outside. The answer is for bind mounts and diagnostics: a
// path can be swapped for a symlink after Resolve returns, so file access
// must go through the provider's file operations, never through the
// returned string.
func (t ThreadTree) Resolve(virtual string) (string, error) {
	v, err := CleanPath(virtual)
	if err != nil {
		return "", err
	}
	root, rel, err := t.open(v)
	if errors.Is(err, ErrNoSuchFile) {
		// No skills directory: nothing there can be a symlink.
		return filepath.Join(t.SkillsDir(), filepath.FromSlash(strings.TrimPrefix(v, Skills))), nil
	}
	if err != nil {
		return "", err
	}
	defer root.Close()
	if _, err := root.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fsError(v, err)
	}
	return filepath.Join(root.Name(), filepath.FromSlash(rel)), nil
}

// open returns the os.Root that holds the clean virtual path v and v
// relative to it. The caller closes the root.
func (t ThreadTree) open(v string) (*os.Root, string, error) {
	base, dir := area(v), t.UserDataDir()
	if base == Skills {
		dir = t.SkillsDir()
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && base == Skills {
			return nil, "", fmt.Errorf("%s: %w", v, ErrNoSuchFile)
		}
		return nil, "", fmt.Errorf("open %s: %w", base, err)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(v, base), "/")
	if rel == "" {
		rel = "."
	}
	return root, rel, nil
}

// CleanPath normalizes a virtual path: a relative path is taken relative to
// /mnt/user-data/workspace, the result is lexically cleaned, and it must be
// /mnt/user-data, /mnt/skills or under one of them. Anything else (host
// paths like /etc/passwd, /proc/self/root/..., traversal that climbs out of
// the mounts, NUL bytes) is refused with ErrPathRefused.
func CleanPath(p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%q: %w", p, ErrPathRefused)
	}
	v := p
	if !strings.HasPrefix(v, "/") {
		v = Workspace + "/" + v
	}
	v = path.Clean(v)
	if !isUnder(v, UserData) && !isUnder(v, Skills) {
		return "", fmt.Errorf("%q: %w", p, ErrPathRefused)
	}
	return v, nil
}

// Writable reports whether a clean virtual path may be written: only
// inside uploads, workspace or outputs (not /mnt/skills, not the
// /mnt/user-data directory itself).
func Writable(v string) bool {
	return v != Uploads && v != Workspace && v != Outputs &&
		(isUnder(v, Uploads) || isUnder(v, Workspace) || isUnder(v, Outputs))
}

// area is the mount a clean virtual path lies in: Skills or UserData.
func area(v string) string {
	if isUnder(v, Skills) {
		return Skills
	}
	return UserData
}

// isUnder reports whether clean path v is base or below it.
func isUnder(v, base string) bool {
	return v == base || strings.HasPrefix(v, base+"/")
}

// fsError translates an os.Root error for virtual path v into the
// package's errors, keeping the cause.
func fsError(v string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: %w", v, ErrNoSuchFile)
	case isEscape(err), errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: %w", v, ErrPathRefused)
	}
	return fmt.Errorf("%s: %w", v, err)
}

// isEscape recognizes os.Root's refusal to leave its directory. The os
// package does not export that error, so it is matched by its message; a
// test in this package fails if the message changes.
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
