package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// fileOps implements the Provider file methods over a thread's tree for
// every provider, so path policy, write serialization and ownership are
// the same whichever isolates the commands. All access goes through an
// os.Root on user-data or skills (see ThreadTree.open).
type fileOps struct {
	locks lockTable
	// uid and gid own what the server creates in the tree so a sandboxed
	// command running as that identity can change it; -1 leaves ownership.
	uid, gid int
}

func (f *fileOps) readFile(tt ThreadTree, p string) ([]byte, error) {
	v, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	root, rel, err := tt.open(v)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return nil, fsError(v, err)
	}
	return data, nil
}

// writeFile creates or replaces (or, with appendTo, extends) a file in an
// area a command may write, creating parent directories. Writes to one
// (sandbox, path) are serialized.
func (f *fileOps) writeFile(id string, tt ThreadTree, p string, data []byte, appendTo bool) error {
	v, err := CleanPath(p)
	if err != nil {
		return err
	}
	if !Writable(v) {
		return fmt.Errorf("%s: %w", v, ErrReadOnly)
	}
	unlock := f.locks.lock(id, v)
	defer unlock()

	root, rel, err := tt.open(v)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := f.mkdirAll(root, path.Dir(rel)); err != nil {
		return fsError(v, err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	file, err := root.OpenFile(rel, flags, 0o640)
	if err != nil {
		return fsError(v, err)
	}
	if f.uid >= 0 {
		if err := file.Chown(f.uid, f.gid); err != nil {
			_ = file.Close()
			return fmt.Errorf("write %s: %w", v, err)
		}
	}
	_, err = file.Write(data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", v, err)
	}
	return nil
}

// mkdirAll creates rel's missing directories one by one inside root and
// hands each new one to the sandbox identity.
func (f *fileOps) mkdirAll(root *os.Root, rel string) error {
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		dir := strings.Join(parts[:i+1], "/")
		err := root.Mkdir(dir, 0o750)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if f.uid >= 0 {
			if err := root.Lchown(dir, f.uid, f.gid); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fileOps) stat(tt ThreadTree, p string) (FileInfo, error) {
	v, err := CleanPath(p)
	if err != nil {
		return FileInfo{}, err
	}
	root, rel, err := tt.open(v)
	if err != nil {
		return FileInfo{}, err
	}
	defer root.Close()
	info, err := root.Stat(rel)
	if err != nil {
		return FileInfo{}, fsError(v, err)
	}
	return fileInfo(v, info), nil
}

// list returns dir's entries sorted by name; symlinks are reported as
// themselves (not followed).
func (f *fileOps) list(tt ThreadTree, dir string) ([]FileInfo, error) {
	v, err := CleanPath(dir)
	if err != nil {
		return nil, err
	}
	root, rel, err := tt.open(v)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(rel)
	if err != nil {
		return nil, fsError(v, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fsError(v, err)
	}
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo(path.Join(v, e.Name()), info))
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// walk visits every regular file under dir in lexical order. Symlinks are
// neither followed nor reported, so a walk never leaves the tree and never
// loops.
func (f *fileOps) walk(ctx context.Context, tt ThreadTree, dir string, fn func(FileInfo) error) error {
	v, err := CleanPath(dir)
	if err != nil {
		return err
	}
	root, rel, err := tt.open(v)
	if err != nil {
		return err
	}
	defer root.Close()
	base := area(v)
	err = fs.WalkDir(root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		return fn(fileInfo(path.Join(base, p), info))
	})
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fsError(v, err)
	}
	return err
}

func fileInfo(v string, info fs.FileInfo) FileInfo {
	return FileInfo{
		Path:    v,
		Size:    info.Size(),
		Mode:    info.Mode(),
		ModTime: info.ModTime(),
		IsDir:   info.IsDir(),
	}
}
