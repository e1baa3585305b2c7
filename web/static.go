package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"sort"
	"strings"

	"github.com/agentplane/agentplane/web/ui"
)

//go:embed static
var staticFiles embed.FS

// staticPrefix is where the embedded files are served.
const staticPrefix = "/static/"

// staticAssets serves the embedded files. Links carry ?v=<content hash>, so
// a response for the current version may be cached for a year: any change
// to a file changes every link. Requests without the current version get a
// short cache, which keeps stale pages working across a deploy.
type staticAssets struct {
	version string
	files   http.Handler
}

func newStaticAssets() (*staticAssets, error) {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	version, err := hashFiles(sub)
	if err != nil {
		return nil, err
	}
	files := http.StripPrefix(ui.Prefix+staticPrefix, http.FileServerFS(sub))
	return &staticAssets{version: version, files: files}, nil
}

// assets returns the versioned URLs the layout links to.
func (s *staticAssets) assets() ui.Assets {
	return ui.Assets{
		CSS:  s.url("console.css"),
		HTMX: s.url("vendor/htmx.min.js"),
	}
}

func (s *staticAssets) url(name string) string {
	return ui.Path(staticPrefix + name + "?v=" + s.version)
}

func (s *staticAssets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Directory listings and README files are nobody's business.
	if strings.HasSuffix(r.URL.Path, "/") || strings.HasSuffix(r.URL.Path, ".md") {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("v") == s.version {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "public, max-age=300")
	}
	s.files.ServeHTTP(w, r)
}

// hashFiles hashes every file's name and content, in a stable order.
func hashFiles(fsys fs.FS) (string, error) {
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", err
		}
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
