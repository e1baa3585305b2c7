package docs

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// newServer mounts the handler exactly as the package doc tells callers to.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	h := Handler("/openapi.json", `agentplane <API>`)
	mux := http.NewServeMux()
	mux.Handle("/docs", h)
	mux.Handle("/docs/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

var refRE = regexp.MustCompile(`(?i)\b(?:src|href|apiDescriptionUrl)="([^"]*)"`)

func TestPageReferencesOnlyLocalAssets(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/docs", "/docs/"} {
		resp, body := get(t, srv, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		// Any scheme or protocol-relative URL would mean a request off-host.
		for _, bad := range []string{"http://", "https://", `"//`, "@import"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: page contains %q:\n%s", path, bad, body)
			}
		}
		refs := refRE.FindAllStringSubmatch(body, -1)
		if len(refs) != 3 {
			t.Fatalf("GET %s: want 3 references (js, css, spec), got %v", path, refs)
		}
		for _, m := range refs {
			if !strings.HasPrefix(m[1], "/") || strings.HasPrefix(m[1], "//") {
				t.Errorf("GET %s: non-local reference %q", path, m[1])
			}
		}
		for _, want := range []string{
			`<script src="/docs/assets/web-components.min.js?v=`,
			`<link rel="stylesheet" href="/docs/assets/styles.min.css?v=`,
			`<elements-api apiDescriptionUrl="/openapi.json" router="hash" layout="sidebar">`,
			`<title>agentplane &lt;API&gt;</title>`, // title is escaped
		} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s: page lacks %q:\n%s", path, want, body)
			}
		}
	}
}

func TestAssetsServed(t *testing.T) {
	srv := newServer(t)
	for path, ct := range map[string]string{
		"/docs/assets/web-components.min.js": "text/javascript; charset=utf-8",
		"/docs/assets/styles.min.css":        "text/css; charset=utf-8",
	} {
		resp, body := get(t, srv, path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != ct {
			t.Errorf("GET %s: Content-Type %q, want %q", path, got, ct)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=31536000") {
			t.Errorf("GET %s: Cache-Control %q", path, cc)
		}
		if len(body) < 1000 {
			t.Errorf("GET %s: body only %d bytes", path, len(body))
		}
		// A revalidation with the ETag must be answered without the body.
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		resp, _ = get(t, srv, path, map[string]string{"If-None-Match": etag})
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match: status %d, want 304", path, resp.StatusCode)
		}
	}
}

func TestUnknownPaths404(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{
		"/docs/assets/nope.js",
		"/docs/assets/",
		"/docs/assets/LICENSE", // kept in the tree, deliberately not embedded
		"/docs/assets/../doc.go",
		"/docs/other",
	} {
		if resp, _ := get(t, srv, path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestMethodNotAllowed(t *testing.T) {
	srv := newServer(t)
	resp, err := srv.Client().Post(srv.URL+"/docs", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /docs: status %d, want 405", resp.StatusCode)
	}
}
