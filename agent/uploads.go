package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentplane/agentplane/agent/internal/agentdb"
	"github.com/agentplane/agentplane/internal/pg"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/tenants/audit"
)

// A thread's files live in its user-data tree on the host (sandbox.Tree):
// users upload into /mnt/user-data/uploads, agents write everywhere under
// user-data, and any regular file there can be downloaded. Every access
// goes through an os.Root on the thread's user-data directory, so no path,
// symlink or rename reaches another thread's files or the host.

// Upload limits. A request over them is refused whole (HTTP 413) and
// leaves no file behind.
const (
	// MaxUploadFileBytes bounds one uploaded file (25 MiB).
	MaxUploadFileBytes = 25 << 20
	// MaxUploadRequestBytes bounds the files of one upload request together
	// (100 MiB).
	MaxUploadRequestBytes = 100 << 20
	// MaxUploadFiles bounds the files of one upload request.
	MaxUploadFiles = 100
	// MaxUploadNameBytes bounds a stored file name, suffix included.
	MaxUploadNameBytes = 200
)

// ErrFilesUnavailable means the server has no thread file tree configured.
var ErrFilesUnavailable = errors.New("thread files are not available on this server")

// Upload is a file a user put into a thread's uploads folder.
type Upload struct {
	ID, ThreadID uuid.UUID
	// Name is the sanitized file name; Path the virtual path agents see.
	Name        string
	Path        string
	Size        int64
	ContentType string
	SHA256      string
	CreatedBy   string
	CreatedAt   time.Time
}

func uploadFromRow(r agentdb.Upload) Upload {
	return Upload{
		ID: r.ID, ThreadID: r.ThreadID, Name: r.Name, Path: path.Join(sandbox.Uploads, r.Name), Size: r.Size,
		ContentType: r.ContentType, SHA256: r.Sha256, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
	}
}

// UploadPart is one file of an upload request, read as it arrives.
type UploadPart struct {
	// Name is the file name the client sent; it is sanitized here.
	Name string
	Body io.Reader
}

// Upload streams parts into the thread's uploads folder and records them,
// with an upload.create audit event each, in one transaction. Names are
// sanitized and made unique in the folder by a " (n)" suffix. Any failure
// (a bad name, a file or the request over its limit, a broken stream)
// removes what this request wrote.
func (s *Service) Upload(ctx context.Context, a tenants.Access, threadID uuid.UUID, parts iter.Seq2[UploadPart, error]) (out []Upload, err error) {
	if _, err := s.GetThread(ctx, a, threadID); err != nil {
		return nil, err
	}
	if s.files == nil {
		return nil, ErrFilesUnavailable
	}
	tt := s.files.Thread(a.Tenant.ID, threadID)
	if err := tt.Ensure(-1, -1); err != nil {
		return nil, fmt.Errorf("upload to thread %s: %w", threadID, err)
	}
	root, err := os.OpenRoot(tt.UserDataDir())
	if err != nil {
		return nil, fmt.Errorf("upload to thread %s: %w", threadID, err)
	}
	defer root.Close()
	w := &uploadWriter{root: root, owner: ownerOf(root, "uploads")}
	defer func() {
		if err != nil {
			w.discard()
		}
	}()
	for part, perr := range parts {
		if perr != nil {
			return nil, perr
		}
		if len(w.files) == MaxUploadFiles {
			return nil, &InvalidError{Field: "file", Message: fmt.Sprintf("at most %d files per request", MaxUploadFiles)}
		}
		if err := w.write(part); err != nil {
			return nil, err
		}
	}
	if len(w.files) == 0 {
		return nil, &InvalidError{Field: "file", Message: "send at least one file part named \"file\""}
	}
	err = pg.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		q := agentdb.New(tx)
		out = out[:0]
		for _, f := range w.files {
			row, err := q.InsertUpload(ctx, agentdb.InsertUploadParams{
				TenantID: a.Tenant.ID, ThreadID: threadID, ID: uuid.Must(uuid.NewV7()), Name: f.name, Size: f.size,
				ContentType: f.contentType, Sha256: f.sha256, CreatedBy: a.Principal.String(),
			})
			if err != nil {
				return fmt.Errorf("record upload %s: %w", f.name, err)
			}
			up := uploadFromRow(row)
			out = append(out, up)
			if err := audit.Record(ctx, tx, audit.Event{
				TenantID: a.Tenant.ID, Actor: a.Principal, Action: "upload.create", TargetKind: "upload", TargetID: up.ID.String(),
				Diff: map[string]any{"thread_id": threadID.String(), "name": up.Name, "size": up.Size, "content_type": up.ContentType, "sha256": up.SHA256},
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// uploadWriter writes one request's files and remembers them so a failed
// request can take them back.
type uploadWriter struct {
	root  *os.Root
	owner *fileOwner
	files []writtenFile
	total int64
}

type writtenFile struct {
	name, contentType, sha256 string
	size                      int64
}

// write stores one part: into a temporary file first, then linked under
// its final name, which never replaces an existing file.
func (w *uploadWriter) write(part UploadPart) error {
	name, err := SanitizeUploadName(part.Name)
	if err != nil {
		return err
	}
	tmp := "uploads/.upload-" + uuid.NewString() + ".part"
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("store upload %s: %w", name, err)
	}
	defer func() { _ = w.root.Remove(tmp) }()
	limit := min(int64(MaxUploadFileBytes), MaxUploadRequestBytes-w.total)
	h := sha256.New()
	head := &headBuffer{}
	n, err := io.Copy(io.MultiWriter(f, h, head), io.LimitReader(part.Body, limit+1))
	if err == nil && w.owner != nil {
		err = f.Chown(w.owner.uid, w.owner.gid)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("store upload %s: %w", name, err)
	case n > MaxUploadFileBytes:
		return &TooLargeError{Field: "file", Limit: MaxUploadFileBytes}
	case n > limit:
		return &TooLargeError{Field: "body", Limit: MaxUploadRequestBytes}
	}
	final, err := w.link(tmp, name)
	if err != nil {
		return err
	}
	w.total += n
	w.files = append(w.files, writtenFile{
		name: final, size: n, sha256: hex.EncodeToString(h.Sum(nil)), contentType: http.DetectContentType(head.b),
	})
	return nil
}

// link gives the temporary file its name, adding " (1)", " (2)", … before
// the extension while the name is taken.
func (w *uploadWriter) link(tmp, name string) (string, error) {
	for i := 0; i < 1000; i++ {
		candidate := numbered(name, i)
		err := w.root.Link(tmp, "uploads/"+candidate)
		if err == nil {
			return candidate, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("store upload %s: %w", name, err)
		}
	}
	return "", &ConflictError{Code: "upload_name_taken", Message: fmt.Sprintf("too many files named like %q", name)}
}

// discard removes the files a failed request wrote.
func (w *uploadWriter) discard() {
	for _, f := range w.files {
		_ = w.root.Remove("uploads/" + f.name)
	}
}

// headBuffer keeps the first bytes written, for content sniffing.
type headBuffer struct{ b []byte }

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := 512 - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// fileOwner is who owns the uploads folder: the identity sandboxed
// commands run as, once a sandbox has been set up for the thread.
type fileOwner struct{ uid, gid int }

// ownerOf returns the owner new files in dir should get: its own, when the
// server runs as root and dir belongs to someone else; else nil.
func ownerOf(root *os.Root, dir string) *fileOwner {
	if os.Geteuid() != 0 {
		return nil
	}
	info, err := root.Stat(dir)
	if err != nil {
		return nil
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 {
		return nil
	}
	return &fileOwner{uid: int(st.Uid), gid: int(st.Gid)}
}

// SanitizeUploadName turns a client's file name into a safe base name:
// the part after the last / or \, invalid UTF-8 replaced, control and
// format characters (bidi overrides) removed, spaces trimmed, at most
// MaxUploadNameBytes bytes (the extension kept). Empty, "." and ".." are
// refused.
func SanitizeUploadName(raw string) (string, error) {
	name := raw
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		return "", &InvalidError{Field: "file", Message: fmt.Sprintf("file name %q is not usable; send a file name", raw)}
	}
	return numbered(name, 0), nil
}

// numbered is name with " (i)" before its extension (i > 0), cut to
// MaxUploadNameBytes by shortening the stem.
func numbered(name string, i int) string {
	stem, ext := name, path.Ext(name)
	if ext == name || len(ext) > 16 {
		ext = "" // ".bashrc" is a stem; a very long "extension" is not one
	}
	stem = strings.TrimSuffix(stem, ext)
	suffix := ext
	if i > 0 {
		suffix = fmt.Sprintf(" (%d)%s", i, ext)
	}
	if room := MaxUploadNameBytes - len(suffix); len(stem) > room {
		stem = stem[:room]
		for len(stem) > 0 && !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1] // never cut a character in half
		}
	}
	return stem + suffix
}

// UploadPage is one page of a thread's uploads, newest first.
type UploadPage struct {
	Uploads    []Upload
	NextCursor string
}

// ListUploads lists the thread's uploads, newest first.
func (s *Service) ListUploads(ctx context.Context, a tenants.Access, threadID uuid.UUID, p tenants.Page) (UploadPage, error) {
	if _, err := s.GetThread(ctx, a, threadID); err != nil {
		return UploadPage{}, err
	}
	before, err := pageBefore(p)
	if err != nil {
		return UploadPage{}, err
	}
	lim := pageLimit(p)
	rows, err := agentdb.New(s.pool).ListUploads(ctx, agentdb.ListUploadsParams{TenantID: a.Tenant.ID, ThreadID: threadID, Before: before, Lim: lim})
	if err != nil {
		return UploadPage{}, fmt.Errorf("list uploads of thread %s: %w", threadID, err)
	}
	out := UploadPage{Uploads: make([]Upload, len(rows))}
	for i, r := range rows {
		out.Uploads[i] = uploadFromRow(r)
	}
	if n := len(rows); n > 0 {
		out.NextCursor = pageNext(n, lim, rows[n-1].ID)
	}
	return out, nil
}

// ThreadFile is an open regular file of a thread's user-data; the caller
// closes Content.
type ThreadFile struct {
	// Path is the virtual path; Name its last element, safe for a
	// Content-Disposition header.
	Path    string
	Name    string
	Size    int64
	ModTime time.Time
	Content *os.File
}

// OpenFile opens a regular file under the thread's /mnt/user-data. p is a
// virtual path (/mnt/user-data/outputs/report.md) or one relative to
// /mnt/user-data (outputs/report.md). Traversal, symlinks leading out of
// the tree, directories and missing files are all "not found", so the
// answer never tells what exists outside.
func (s *Service) OpenFile(ctx context.Context, a tenants.Access, threadID uuid.UUID, p string) (*ThreadFile, error) {
	if _, err := s.GetThread(ctx, a, threadID); err != nil {
		return nil, err
	}
	if s.files == nil {
		return nil, ErrFilesUnavailable
	}
	missing := &NotFoundError{Kind: "file", Key: p}
	v, rel, ok := userDataPath(p)
	if !ok {
		return nil, missing
	}
	root, err := os.OpenRoot(s.files.Thread(a.Tenant.ID, threadID).UserDataDir())
	if err != nil {
		return nil, missing
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, missing
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, missing
	}
	return &ThreadFile{Path: v, Name: downloadName(path.Base(v)), Size: info.Size(), ModTime: info.ModTime(), Content: f}, nil
}

// downloadName is a file name fit for Content-Disposition: agents may
// create names with control or bidi characters; those become "_".
func downloadName(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(name, "_"))
}

// userDataPath checks a requested path and returns it as a virtual path
// and relative to user-data. Any ".." element is refused outright rather
// than cleaned away.
func userDataPath(p string) (virtual, rel string, ok bool) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", "", false
	}
	v := p
	if !strings.HasPrefix(v, "/") {
		v = sandbox.UserData + "/" + v
	}
	for _, seg := range strings.Split(v, "/") {
		if seg == ".." {
			return "", "", false
		}
	}
	v = path.Clean(v)
	rel, ok = strings.CutPrefix(v, sandbox.UserData+"/")
	if !ok {
		return "", "", false
	}
	return v, rel, true
}

// SandboxStatus is what the thread page shows of the thread's sandbox.
type SandboxStatus struct {
	// ID is empty until the thread's first sandbox tool call.
	ID string
	// Status is active, idle or destroyed; empty when unknown.
	Status     string
	Provider   string
	CreatedAt  *time.Time
	LastUsedAt *time.Time
}

// ThreadSandbox returns the thread's sandbox id and state.
func (s *Service) ThreadSandbox(ctx context.Context, a tenants.Access, threadID uuid.UUID) (SandboxStatus, error) {
	row, err := agentdb.New(s.pool).ThreadSandboxStatus(ctx, agentdb.ThreadSandboxStatusParams{TenantID: a.Tenant.ID, ID: threadID})
	if err != nil {
		return SandboxStatus{}, notFound(err, "thread", threadID.String())
	}
	out := SandboxStatus{CreatedAt: row.CreatedAt, LastUsedAt: row.LastUsedAt}
	for _, f := range []struct {
		src *string
		dst *string
	}{{row.SandboxID, &out.ID}, {row.Status, &out.Status}, {row.Provider, &out.Provider}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return out, nil
}
