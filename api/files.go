package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/google/uuid"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/policy"
)

// A thread's files: uploads into /mnt/user-data/uploads, its artifact list
// and downloads of any regular file under /mnt/user-data.
//
// Uploads are streamed part by part into the thread's tree (nothing is
// buffered whole): the request body is capped at the request limit plus
// multipart framing, and each file at its own limit (agent.MaxUpload*).
//
// A download names the file by its path relative to /mnt/user-data,
// URL-escaped as one path segment (outputs%2Freport.md), because a path
// parameter cannot span segments.

// uploadFraming is what the upload body may hold beyond its files: part
// headers and boundaries.
const uploadFraming = 1 << 20

// UploadOut is an uploaded file.
type UploadOut struct {
	ID          string    `json:"id" format:"uuid" doc:"Upload id."`
	Name        string    `json:"name" doc:"Stored file name: the sanitized base name, with \" (n)\" added when the name was taken." example:"report.pdf"`
	Path        string    `json:"path" doc:"Virtual path the agent's sandbox sees." example:"/mnt/user-data/uploads/report.pdf"`
	Size        int64     `json:"size" doc:"Bytes."`
	ContentType string    `json:"content_type" doc:"Media type sniffed from the content." example:"application/pdf"`
	SHA256      string    `json:"sha256" doc:"Hex SHA-256 of the content."`
	CreatedBy   string    `json:"created_by" doc:"Principal that uploaded it."`
	CreatedAt   time.Time `json:"created_at" doc:"Upload time."`
}

func uploadOut(u agent.Upload) UploadOut {
	return UploadOut{
		ID: u.ID.String(), Name: u.Name, Path: u.Path, Size: u.Size, ContentType: u.ContentType,
		SHA256: u.SHA256, CreatedBy: u.CreatedBy, CreatedAt: u.CreatedAt,
	}
}

type uploadCreateIn struct {
	ThreadPath
	// contentType and body (capped) are set by Resolve: the handler
	// streams the parts itself.
	contentType string
	body        io.Reader
}

// Resolve hands the handler the raw body, capped, and its media type.
func (in *uploadCreateIn) Resolve(ctx huma.Context) []error {
	r, w := humachi.Unwrap(ctx)
	in.contentType = r.Header.Get("Content-Type")
	in.body = http.MaxBytesReader(w, r.Body, agent.MaxUploadRequestBytes+uploadFraming)
	return nil
}

type uploadCreateOut struct {
	Status int
	Body   struct {
		Uploads []UploadOut `json:"uploads" doc:"The stored files, in request order."`
	}
}

type uploadListIn struct {
	ThreadPath
	PageQuery
}

type uploadListOut struct {
	Body struct {
		Uploads    []UploadOut `json:"uploads" doc:"Newest first."`
		NextCursor string      `json:"next_cursor,omitempty" doc:"Cursor for the next page; absent on the last page."`
	}
}

type artifactListOut struct {
	Body struct {
		Artifacts []string `json:"artifacts" doc:"Virtual paths the thread's runs presented with present_files, first presented first, without duplicates." example:"[\"/mnt/user-data/outputs/report.md\"]"`
	}
}

type fileGetIn struct {
	ThreadPath
	Path string `path:"path" minLength:"1" maxLength:"4096" doc:"The file's path relative to /mnt/user-data (or the whole virtual path), URL-escaped as one segment." example:"outputs%2Freport.md"`
}

func (s *Server) registerFiles(api huma.API) {
	up := op("upload-create", http.MethodPost, "/v1/tenants/{tenant}/threads/{thread}/uploads", "Upload files into a thread", policy.ThreadWrite, "Files")
	up.DefaultStatus = http.StatusCreated
	up.Description += fmt.Sprintf(" Send `multipart/form-data` with one or more parts named `file`."+
		" Each lands in the thread's `/mnt/user-data/uploads` under its base name, stripped of control characters"+
		" and cut to %d bytes; a taken name gets ` (1)`, ` (2)`, … before its extension."+
		" Limits: %d MiB per file and %d MiB per request (413 over them), at most %d files (422); a refused request stores nothing.",
		agent.MaxUploadNameBytes, agent.MaxUploadFileBytes>>20, agent.MaxUploadRequestBytes>>20, agent.MaxUploadFiles)
	huma.Register(api, up, s.createUploads)
	// The body is streamed by the handler, so Huma must not read it; the
	// document still describes it.
	api.OpenAPI().Paths[up.Path].Post.RequestBody = uploadRequestBody()

	huma.Register(api, op("upload-list", http.MethodGet, "/v1/tenants/{tenant}/threads/{thread}/uploads", "List a thread's uploads", policy.ThreadRead, "Files"),
		func(ctx context.Context, in *uploadListIn) (*uploadListOut, error) {
			page, err := s.deps.Agents.ListUploads(ctx, accessFrom(ctx), uuid.MustParse(in.Thread), in.page())
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &uploadListOut{}
			out.Body.Uploads = make([]UploadOut, len(page.Uploads))
			for i, u := range page.Uploads {
				out.Body.Uploads[i] = uploadOut(u)
			}
			out.Body.NextCursor = page.NextCursor
			return out, nil
		})

	huma.Register(api, op("artifact-list", http.MethodGet, "/v1/tenants/{tenant}/threads/{thread}/artifacts", "List a thread's artifacts", policy.ThreadRead, "Files"),
		func(ctx context.Context, in *ThreadPath) (*artifactListOut, error) {
			paths, err := s.deps.Agents.Artifacts(ctx, accessFrom(ctx), uuid.MustParse(in.Thread))
			if err != nil {
				return nil, s.fail(ctx, err)
			}
			out := &artifactListOut{}
			out.Body.Artifacts = paths
			return out, nil
		})

	get := op("file-get", http.MethodGet, "/v1/tenants/{tenant}/threads/{thread}/files/{path}", "Download a thread file", policy.ThreadRead, "Files")
	get.Description += " Any regular file under the thread's `/mnt/user-data` (uploads, workspace, outputs), as an attachment." +
		" The path is relative to `/mnt/user-data` and URL-escaped as one segment: `files/outputs%2Freport.md`." +
		" The media type follows the extension, else the content; ranges are supported." +
		" Paths that climb out of the tree, symlinks leading outside, directories and missing files all answer 404."
	get.Responses = map[string]*huma.Response{"200": {
		Description: "The file's content",
		Content:     map[string]*huma.MediaType{"application/octet-stream": {Schema: &huma.Schema{Type: "string", Format: "binary"}}},
	}}
	huma.Register(api, get, s.getFile)
}

// uploadRequestBody documents upload-create's multipart body.
func uploadRequestBody() *huma.RequestBody {
	return &huma.RequestBody{
		Required:    true,
		Description: "One or more files, each a part named `file` with a filename.",
		Content: map[string]*huma.MediaType{"multipart/form-data": {
			Schema: &huma.Schema{
				Type:     "object",
				Required: []string{"file"},
				Properties: map[string]*huma.Schema{"file": {
					Type:        "array",
					Description: "The files (repeat the part for several).",
					Items:       &huma.Schema{Type: "string", Format: "binary", ContentEncoding: "binary"},
				}},
			},
			Encoding: map[string]*huma.Encoding{"file": {ContentType: "application/octet-stream"}},
		}},
	}
}

func (s *Server) createUploads(ctx context.Context, in *uploadCreateIn) (*uploadCreateOut, error) {
	ups, err := s.deps.Agents.Upload(ctx, accessFrom(ctx), uuid.MustParse(in.Thread), fileParts(in.contentType, in.body))
	if err != nil {
		return nil, s.failFiles(ctx, err)
	}
	out := &uploadCreateOut{Status: http.StatusCreated}
	out.Body.Uploads = make([]UploadOut, len(ups))
	for i, u := range ups {
		out.Body.Uploads[i] = uploadOut(u)
	}
	return out, nil
}

// fileParts yields the body's parts named "file"; a body that is not
// multipart/form-data, any other part, or a broken body ends the sequence
// with an error. It reads nothing until the service has found the thread.
func fileParts(contentType string, body io.Reader) iter.Seq2[agent.UploadPart, error] {
	return func(yield func(agent.UploadPart, error) bool) {
		mt, params, err := mime.ParseMediaType(contentType)
		if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
			yield(agent.UploadPart{}, newProblem(http.StatusUnsupportedMediaType, "", `send multipart/form-data with parts named "file"`))
			return
		}
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(agent.UploadPart{}, bodyError(err))
				return
			}
			if p.FormName() != "file" {
				prob := newProblem(http.StatusUnprocessableEntity, "validation_failed", "validation failed")
				prob.Errors = []*huma.ErrorDetail{{Message: `unexpected part; send files as parts named "file"`, Location: "body." + p.FormName()}}
				yield(agent.UploadPart{}, prob)
				return
			}
			if !yield(agent.UploadPart{Name: p.FileName(), Body: partReader{p}}, nil) {
				return
			}
		}
	}
}

// partReader reports a broken body inside a part as a problem too.
type partReader struct{ p *multipart.Part }

func (r partReader) Read(b []byte) (int, error) {
	n, err := r.p.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		err = bodyError(err)
	}
	return n, err
}

// bodyError is the problem for a body that broke off or went over its cap.
func bodyError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return newProblem(http.StatusRequestEntityTooLarge, "", fmt.Sprintf("the upload exceeds %d MiB", agent.MaxUploadRequestBytes>>20))
	}
	return newProblem(http.StatusBadRequest, "malformed_multipart", "the multipart body is malformed or ended early")
}

func (s *Server) getFile(ctx context.Context, in *fileGetIn) (*huma.StreamResponse, error) {
	f, err := s.deps.Agents.OpenFile(ctx, accessFrom(ctx), uuid.MustParse(in.Thread), in.Path)
	if err != nil {
		return nil, s.failFiles(ctx, err)
	}
	return &huma.StreamResponse{Body: func(hc huma.Context) {
		defer f.Content.Close()
		r, w := humachi.Unwrap(hc)
		h := w.Header()
		h.Set("Content-Disposition", attachment(f.Name))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		h.Set("Cache-Control", "private, no-cache")
		// ServeContent types the file by its extension, else by sniffing
		// its first bytes, and answers ranges and conditional requests.
		http.ServeContent(w, r, f.Name, f.ModTime, f.Content)
	}}, nil
}

// attachment is a Content-Disposition that makes browsers save the file.
func attachment(name string) string {
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// failFiles adds the files-specific answers to s.fail.
func (s *Server) failFiles(ctx context.Context, err error) error {
	if errors.Is(err, agent.ErrFilesUnavailable) {
		return s.fail(ctx, newProblem(http.StatusServiceUnavailable, "files_unavailable", "thread files are not configured on this server"))
	}
	return s.fail(ctx, err)
}

// DeliveryReceiptOut is a run's delivery receipt (DESIGN §10).
type DeliveryReceiptOut struct {
	Produced  []string  `json:"produced" doc:"Outputs the run created or changed under /mnt/user-data/outputs (virtual paths, sorted)."`
	Presented []string  `json:"presented" doc:"Paths the run declared with present_files, first declared first."`
	Matched   []string  `json:"matched" doc:"Produced paths covered by a presented path (equal to it or under it)."`
	Verdict   string    `json:"verdict" enum:"delivered,incomplete,nothing_produced" doc:"nothing_produced: no outputs; delivered: at least one produced path is covered; incomplete: outputs but none covered (a run that would have succeeded failed)."`
	SettledAt time.Time `json:"settled_at" doc:"When the receipt was written."`
}

func deliveryReceiptOut(rc *agent.Receipt) *DeliveryReceiptOut {
	if rc == nil {
		return nil
	}
	return &DeliveryReceiptOut{Produced: rc.Produced, Presented: rc.Presented, Matched: rc.Matched, Verdict: rc.Verdict, SettledAt: rc.SettledAt}
}
