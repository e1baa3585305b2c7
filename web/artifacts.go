package web

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/sandbox"
	"github.com/agentplane/agentplane/tenants"
	"github.com/agentplane/agentplane/web/ui"
)

// fileRoutes mirrors file-get for a session: any regular file under the
// thread's /mnt/user-data, by its path relative to it
// (…/threads/{thread}/files/outputs/report.md), with the same refusals.
func (c *Console) fileRoutes(r chi.Router) {
	r.With(c.need(policy.ThreadRead)).Get("/threads/{thread}/files/*", c.downloadFile)
}

func (c *Console) downloadFile(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, ok := c.pathID(w, r, "thread")
	if !ok {
		return
	}
	p := chi.URLParam(r, "*")
	if r.URL.RawPath != "" { // the route matched the escaped path
		var err error
		if p, err = url.PathUnescape(p); err != nil {
			c.notFound(w, r)
			return
		}
	}
	f, err := c.deps.Agents.OpenFile(ctx, visitFrom(ctx).access, id, p)
	if errors.Is(err, agent.ErrFilesUnavailable) {
		c.errorPage(w, r, http.StatusServiceUnavailable, "Files unavailable", "Thread files are not configured on this server.")
		return
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	defer f.Content.Close()
	h := w.Header()
	h.Set("Content-Disposition", attachment(f.Name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	// ServeContent types the file by extension, else by its first bytes.
	http.ServeContent(w, r, f.Name, f.ModTime, f.Content)
}

// attachment is a Content-Disposition that makes browsers save the file.
func attachment(name string) string {
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// fileHref is the console download URL of a virtual path under
// /mnt/user-data, or "" for any other path.
func fileHref(tenant string, threadID uuid.UUID, virtual string) string {
	rel, ok := strings.CutPrefix(virtual, sandbox.UserData+"/")
	if !ok || rel == "" {
		return ""
	}
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return ui.TenantPath(tenant, sectionThreads, threadID.String(), "files") + "/" + strings.Join(segs, "/")
}

// fileLinks links paths to their downloads when linked.
func fileLinks(tenant string, threadID uuid.UUID, paths []string, linked bool) []ui.FileLink {
	out := make([]ui.FileLink, len(paths))
	for i, p := range paths {
		out[i] = ui.FileLink{Path: p}
		if linked {
			out[i].Href = fileHref(tenant, threadID, p)
		}
	}
	return out
}

// runFiles builds the run page's files panel. Links and the thread's
// artifacts need thread:read, like the downloads they point to.
func (c *Console) runFiles(ctx context.Context, a tenants.Access, runID uuid.UUID) (ui.RunFilesView, error) {
	run, err := c.deps.Agents.GetRun(ctx, a, runID)
	if err != nil {
		return ui.RunFilesView{}, err
	}
	v := ui.RunFilesView{CanReadThread: c.lookupThread(ctx, a, run.ThreadID) != nil}
	if v.CanReadThread {
		arts, err := c.deps.Agents.Artifacts(ctx, a, run.ThreadID)
		if err != nil && !isNotFound(err) {
			return ui.RunFilesView{}, err
		}
		v.Artifacts = fileLinks(a.Tenant.Slug, run.ThreadID, arts, true)
	}
	rc, err := c.deps.Agents.Receipt(ctx, a, runID)
	if err != nil {
		return ui.RunFilesView{}, err
	}
	if rc != nil {
		links := func(ps []string) []ui.FileLink { return fileLinks(a.Tenant.Slug, run.ThreadID, ps, v.CanReadThread) }
		v.Delivery = &ui.ReceiptView{
			Verdict: rc.Verdict, Produced: links(rc.Produced), Presented: links(rc.Presented),
			Matched: links(rc.Matched), Settled: fmtTime(rc.SettledAt),
		}
	}
	return v, nil
}

// threadFiles builds the thread page's files panel: the sandbox, the
// newest uploads and the artifacts.
func (c *Console) threadFiles(ctx context.Context, a tenants.Access, threadID uuid.UUID) (ui.ThreadFilesView, error) {
	sb, err := c.deps.Agents.ThreadSandbox(ctx, a, threadID)
	if err != nil {
		return ui.ThreadFilesView{}, err
	}
	v := ui.ThreadFilesView{Sandbox: ui.SandboxView{
		ID: sb.ID, Status: sb.Status, Provider: sb.Provider, LastUsed: fmtOptTime(sb.LastUsedAt, ""),
	}}
	page, err := c.deps.Agents.ListUploads(ctx, a, threadID, tenants.Page{Limit: listLimit})
	if err != nil {
		return ui.ThreadFilesView{}, err
	}
	v.MoreUploads = page.NextCursor != ""
	for _, u := range page.Uploads {
		v.Uploads = append(v.Uploads, ui.UploadRow{
			Name: u.Name, Href: fileHref(a.Tenant.Slug, threadID, u.Path), Size: fmtBytes(u.Size),
			ContentType: u.ContentType, Created: fmtTime(u.CreatedAt), CreatedBy: u.CreatedBy,
		})
	}
	arts, err := c.deps.Agents.Artifacts(ctx, a, threadID)
	if err != nil {
		return ui.ThreadFilesView{}, err
	}
	v.Artifacts = fileLinks(a.Tenant.Slug, threadID, arts, true)
	return v, nil
}

// fmtBytes is a size for people: 512 B, 1.5 KiB, 25.0 MiB.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
