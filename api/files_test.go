package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/sandbox"
)

// filesHarness is a harness whose agent service has a thread tree.
type filesHarness struct {
	*harness
	tree sandbox.Tree
}

func newFilesHarness(t *testing.T) *filesHarness {
	t.Helper()
	tree := sandbox.Tree{Root: t.TempDir()}
	h := newHarness(t, func(d *api.Deps) { d.Agents.UseFiles(tree) })
	return &filesHarness{harness: h, tree: tree}
}

// userData is a thread's /mnt/user-data on the host.
func (h *filesHarness) userData(tenantID, threadID string) string {
	return h.tree.Thread(uuid.MustParse(tenantID), uuid.MustParse(threadID)).UserDataDir()
}

// put writes a file under a thread's user-data behind the API's back, as
// an agent's sandbox would.
func (h *filesHarness) put(t *testing.T, s runSetup, rel, content string) {
	t.Helper()
	p := filepath.Join(h.userData(s.tn.ID, s.thread), filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// part is one multipart part: form name, file name (none when noFile)
// and content.
type part struct {
	form, filename string
	noFile         bool
	body           io.Reader
}

func file(name, content string) part {
	return part{form: "file", filename: name, body: strings.NewReader(content)}
}

// send issues a raw request; the body is streamed.
func (h *harness) send(t *testing.T, method, path, token, contentType string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, h.srv.URL+path, body)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := h.srv.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &out.JSON), "body: %s", raw)
	}
	return out
}

// upload posts parts as multipart/form-data, streaming them.
func (h *harness) upload(t *testing.T, path, token string, parts ...part) response {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, p := range parts {
			var w io.Writer
			var err error
			if p.noFile {
				w, err = mw.CreateFormField(p.form)
			} else {
				w, err = mw.CreateFormFile(p.form, p.filename)
			}
			if err == nil {
				_, err = io.Copy(w, p.body)
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	t.Cleanup(func() { _ = pr.Close() })
	return h.send(t, http.MethodPost, path, token, mw.FormDataContentType(), pr)
}

func sum(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

func TestUploadRoundTrip(t *testing.T) {
	t.Parallel()
	h := newFilesHarness(t)
	s := h.runSetup(t)
	uploads := s.base + "/threads/" + s.thread + "/uploads"
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

	r := h.upload(t, uploads, s.dev.Key, file("../../etc/passwd", "root:x:0:0"), file(`C:\Users\me\notes.txt`, "hello"), file("pixel", png), file("evil\u202etxt.exe", "MZ"))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	got := r.list("uploads")
	require.Len(t, got, 4)
	require.Equal(t, "passwd", got[0]["name"])
	require.Equal(t, "/mnt/user-data/uploads/passwd", got[0]["path"])
	require.Equal(t, "text/plain; charset=utf-8", got[0]["content_type"])
	require.EqualValues(t, len("root:x:0:0"), got[0]["size"])
	require.Equal(t, sum("root:x:0:0"), got[0]["sha256"])
	require.Equal(t, "notes.txt", got[1]["name"])
	require.Equal(t, "pixel", got[2]["name"])
	require.Equal(t, "image/png", got[2]["content_type"])
	require.Equal(t, "eviltxt.exe", got[3]["name"], "bidi overrides are removed")
	require.Contains(t, got[0]["created_by"], "api_key:")

	// The files are in the thread's uploads folder, and nowhere else.
	dir := filepath.Join(h.userData(s.tn.ID, s.thread), "uploads")
	content, err := os.ReadFile(filepath.Join(dir, "passwd"))
	require.NoError(t, err)
	require.Equal(t, "root:x:0:0", string(content))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 4, "no temporary files left behind")

	// A taken name gets a suffix before its extension.
	r = h.upload(t, uploads, s.dev.Key, file("notes.txt", "again"), file("notes.txt", "and again"))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, "notes (1).txt", r.list("uploads")[0]["name"])
	require.Equal(t, "notes (2).txt", r.list("uploads")[1]["name"])

	list := h.ok(t, http.StatusOK, "GET", uploads, s.dev.Key, nil)
	names := []string{}
	for _, u := range list.list("uploads") {
		names = append(names, u["name"].(string))
	}
	require.Equal(t, []string{"notes (2).txt", "notes (1).txt", "eviltxt.exe", "pixel", "notes.txt", "passwd"}, names)

	// Each file is audited.
	a := h.ok(t, http.StatusOK, "GET", s.base+"/audit-events?action=upload.create", h.admin, nil)
	require.Len(t, a.list("events"), 6)

	// And downloadable.
	dl := h.do(t, "GET", s.base+"/threads/"+s.thread+"/files/"+url.PathEscape("uploads/notes (1).txt"), s.dev.Key, nil)
	require.Equal(t, http.StatusOK, dl.Status, string(dl.Raw))
	require.Equal(t, "again", string(dl.Raw))
}

func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	h := newFilesHarness(t)
	s := h.runSetup(t)
	uploads := s.base + "/threads/" + s.thread + "/uploads"
	huge := func(n int64) io.Reader { return io.LimitReader(zeros{}, n) }

	for _, tt := range []struct {
		name   string
		parts  []part
		status int
		code   string
	}{
		{"file over 25 MiB", []part{file("ok.txt", "fine"), {form: "file", filename: "big.bin", body: huge(agent.MaxUploadFileBytes + 1)}}, http.StatusRequestEntityTooLarge, "input_too_large"},
		{"request over 100 MiB", []part{
			{form: "file", filename: "a.bin", body: huge(24 << 20)}, {form: "file", filename: "b.bin", body: huge(24 << 20)},
			{form: "file", filename: "c.bin", body: huge(24 << 20)}, {form: "file", filename: "d.bin", body: huge(24 << 20)},
			{form: "file", filename: "e.bin", body: huge(24 << 20)},
		}, http.StatusRequestEntityTooLarge, ""},
		{"dot-dot name", []part{file("ok.txt", "fine"), file("..", "x")}, http.StatusUnprocessableEntity, "validation_failed"},
		{"format characters only", []part{file("\u202e \u200b", "x")}, http.StatusUnprocessableEntity, "validation_failed"},
		{"no file name", []part{{form: "file", noFile: true, body: strings.NewReader("x")}}, http.StatusUnprocessableEntity, "validation_failed"},
		{"other part", []part{{form: "comment", noFile: true, body: strings.NewReader("x")}}, http.StatusUnprocessableEntity, "validation_failed"},
		{"no parts", nil, http.StatusUnprocessableEntity, "validation_failed"},
		{"too many files", manyFiles(agent.MaxUploadFiles + 1), http.StatusUnprocessableEntity, "validation_failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := h.upload(t, uploads, s.dev.Key, tt.parts...)
			require.Equal(t, tt.status, r.Status, string(r.Raw))
			require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
			if tt.code != "" {
				require.Equal(t, tt.code, r.str("code"), string(r.Raw))
			}
		})
	}
	// Nothing of the refused requests was kept.
	entries, err := os.ReadDir(filepath.Join(h.userData(s.tn.ID, s.thread), "uploads"))
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Empty(t, h.ok(t, http.StatusOK, "GET", uploads, s.dev.Key, nil).list("uploads"))

	r := h.send(t, http.MethodPost, uploads, s.dev.Key, "application/json", strings.NewReader(`{"file":"x"}`))
	requireProblem(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	// A body that ends inside a part.
	r = h.send(t, http.MethodPost, uploads, s.dev.Key, "multipart/form-data; boundary=xyz",
		strings.NewReader("--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nabc"))
	requireProblem(t, r, http.StatusBadRequest, "malformed_multipart")
	entries, err = os.ReadDir(filepath.Join(h.userData(s.tn.ID, s.thread), "uploads"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

func manyFiles(n int) []part {
	out := make([]part, n)
	for i := range out {
		out[i] = file("f.txt", "x")
	}
	return out
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestUploadsAreTenantScoped(t *testing.T) {
	t.Parallel()
	h := newFilesHarness(t)
	a := h.runSetup(t)
	b := h.runSetup(t)
	r := h.upload(t, a.base+"/threads/"+a.thread+"/uploads", a.dev.Key, file("a.txt", "tenant a"))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	// B's key on A's tenant: no standing there.
	requireProblem(t, h.do(t, "GET", a.base+"/threads/"+a.thread+"/uploads", b.dev.Key, nil), http.StatusNotFound, "tenant_not_found")
	requireProblem(t, h.upload(t, a.base+"/threads/"+a.thread+"/uploads", b.dev.Key, file("x.txt", "x")), http.StatusNotFound, "tenant_not_found")
	// A's thread under B's tenant: no such thread.
	requireProblem(t, h.do(t, "GET", b.base+"/threads/"+a.thread+"/uploads", b.dev.Key, nil), http.StatusNotFound, "thread_not_found")
	requireProblem(t, h.upload(t, b.base+"/threads/"+a.thread+"/uploads", b.dev.Key, file("x.txt", "x")), http.StatusNotFound, "thread_not_found")
	requireProblem(t, h.do(t, "GET", b.base+"/threads/"+a.thread+"/files/uploads%2Fa.txt", b.dev.Key, nil), http.StatusNotFound, "thread_not_found")

	// A viewer reads but does not upload.
	owner := h.createKey(t, a.tn.Slug, h.admin, policy.RoleOwner)
	viewer := h.createKey(t, a.tn.Slug, owner.Key, policy.RoleViewer)
	requireProblem(t, h.upload(t, a.base+"/threads/"+a.thread+"/uploads", viewer.Key, file("v.txt", "v")), http.StatusForbidden, "forbidden")
	require.Len(t, h.ok(t, http.StatusOK, "GET", a.base+"/threads/"+a.thread+"/uploads", viewer.Key, nil).list("uploads"), 1)
}

func TestFileDownload(t *testing.T) {
	t.Parallel()
	h := newFilesHarness(t)
	s := h.runSetup(t)
	other := h.ok(t, http.StatusCreated, "POST", s.base+"/threads", s.dev.Key, map[string]any{"title": "other"}).str("id")
	files := s.base + "/threads/" + s.thread + "/files/"
	h.put(t, s, "outputs/report.json", `{"ok":true}`)
	h.put(t, s, "outputs/page.html", `<script>alert(1)</script>`)
	h.put(t, s, "outputs/deep/notes", "plain words")
	h.put(t, s, "workspace/draft.txt", "draft")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("host secret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(h.userData(s.tn.ID, s.thread), "outputs", "escape.txt")))

	for _, tt := range []struct {
		path, contentType, body, filename string
	}{
		{"outputs/report.json", "application/json", `{"ok":true}`, "report.json"},
		{"/mnt/user-data/outputs/report.json", "application/json", `{"ok":true}`, "report.json"},
		{"outputs/page.html", "text/html; charset=utf-8", `<script>alert(1)</script>`, "page.html"},
		{"outputs/deep/notes", "text/plain; charset=utf-8", "plain words", "notes"},
		{"workspace/draft.txt", "text/plain; charset=utf-8", "draft", "draft.txt"},
	} {
		r := h.do(t, "GET", files+url.PathEscape(tt.path), s.dev.Key, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", tt.path, r.Raw)
		require.Equal(t, tt.body, string(r.Raw))
		require.Equal(t, tt.contentType, r.Header.Get("Content-Type"), tt.path)
		require.Equal(t, "attachment; filename="+tt.filename, r.Header.Get("Content-Disposition"))
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
	}

	for _, p := range []string{
		"../../../../etc/passwd", "outputs/../../../../etc/passwd", "/etc/passwd", "/mnt/skills/x", "outputs/escape.txt",
		"outputs", "outputs/deep", "outputs/missing.txt", "/mnt/user-data", "..",
	} {
		r := h.do(t, "GET", files+url.PathEscape(p), s.dev.Key, nil)
		requireProblem(t, r, http.StatusNotFound, "file_not_found")
		require.NotContains(t, string(r.Raw), h.tree.Root, "never leak host paths")
		require.NotContains(t, string(r.Raw), "host secret")
	}
	// Another thread of the same tenant has none of these files.
	r := h.do(t, "GET", s.base+"/threads/"+other+"/files/"+url.PathEscape("outputs/report.json"), s.dev.Key, nil)
	requireProblem(t, r, http.StatusNotFound, "file_not_found")
}

func TestArtifactsAndDeliveryOverHTTP(t *testing.T) {
	t.Parallel()
	h := newFilesHarness(t)
	s := h.runSetup(t)
	arts := s.base + "/threads/" + s.thread + "/artifacts"
	require.Equal(t, []any{}, h.ok(t, http.StatusOK, "GET", arts, s.dev.Key, nil).JSON["artifacts"])

	run := h.ok(t, http.StatusAccepted, "POST", s.base+"/threads/"+s.thread+"/runs", s.dev.Key, map[string]any{"input": "hello"}).str("id")
	got := h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+run, s.dev.Key, nil)
	require.NotContains(t, got.JSON, "delivery", "no receipt before the run settles")

	tenantID, threadID, runID := uuid.MustParse(s.tn.ID), uuid.MustParse(s.thread), uuid.MustParse(run)
	_, err := h.agents.PresentFiles(t.Context(), tenantID, threadID, runID, []string{"/mnt/user-data/outputs/b.md", "/mnt/user-data/outputs/a.md"})
	require.NoError(t, err)
	_, err = h.agents.PresentFiles(t.Context(), tenantID, threadID, runID, []string{"/mnt/user-data/outputs/a.md", "/mnt/user-data/outputs/c"})
	require.NoError(t, err)
	require.Equal(t, []any{"/mnt/user-data/outputs/b.md", "/mnt/user-data/outputs/a.md", "/mnt/user-data/outputs/c"},
		h.ok(t, http.StatusOK, "GET", arts, s.dev.Key, nil).JSON["artifacts"])

	h.execute(t, s.tn.ID, run)
	got = h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+run, s.dev.Key, nil)
	require.Equal(t, "succeeded", got.str("status"), string(got.Raw))
	d, ok := got.JSON["delivery"].(map[string]any)
	require.True(t, ok, string(got.Raw))
	require.Equal(t, "nothing_produced", d["verdict"])
	require.Equal(t, []any{}, d["produced"])
	require.Equal(t, []any{}, d["matched"])
	require.Equal(t, []any{"/mnt/user-data/outputs/b.md", "/mnt/user-data/outputs/a.md", "/mnt/user-data/outputs/c"}, d["presented"])
	require.NotEmpty(t, d["settled_at"])

	// The run's events carry the receipt just before run.completed.
	evs := h.ok(t, http.StatusOK, "GET", s.base+"/runs/"+run+"/events", s.dev.Key, nil).list("events")
	n := len(evs)
	require.Equal(t, "run.settled", evs[n-2]["type"])
	require.Equal(t, "run.completed", evs[n-1]["type"])
	require.Equal(t, "nothing_produced", evs[n-2]["data"].(map[string]any)["verdict"])

	// Other tenants see neither.
	o := h.runSetup(t)
	requireProblem(t, h.do(t, "GET", o.base+"/threads/"+s.thread+"/artifacts", o.dev.Key, nil), http.StatusNotFound, "thread_not_found")
}

func TestFilesWithoutTreeAnswer503(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := h.runSetup(t)
	r := h.upload(t, s.base+"/threads/"+s.thread+"/uploads", s.dev.Key, file("a.txt", "a"))
	requireProblem(t, r, http.StatusServiceUnavailable, "files_unavailable")
	requireProblem(t, h.do(t, "GET", s.base+"/threads/"+s.thread+"/files/outputs%2Fa.txt", s.dev.Key, nil), http.StatusServiceUnavailable, "files_unavailable")
}
