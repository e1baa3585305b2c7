package docs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is the path the handler is mounted at. The page references its
// assets by absolute path under it, so it is fixed rather than configurable.
const Prefix = "/docs"

// Only the two runtime files are embedded; the license files next to them
// stay in the source tree and are not served.
//
//go:embed assets/web-components.min.js assets/styles.min.css
var assetFS embed.FS

// contentTypes is explicit because mime.TypeByExtension consults the host's
// /etc/mime.types, which may map .js to something browsers refuse to execute
// under nosniff.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// asset is one embedded file plus the validators computed once at start-up.
type asset struct {
	body  []byte
	ctype string
	hash  string // hex SHA-256 of body
}

var page = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="stylesheet" href="{{.CSS}}">
<script src="{{.JS}}"></script>
<style>html, body { height: 100%; margin: 0; }</style>
</head>
<body>
<elements-api apiDescriptionUrl="{{.SpecURL}}" router="hash" layout="sidebar"></elements-api>
</body>
</html>
`))

// Handler returns the /docs handler: the Elements page for specURL titled
// title, and the embedded assets. See the package doc for how to mount it.
func Handler(specURL, title string) http.Handler {
	assets := loadAssets()

	// The asset URLs carry a content hash so they can be cached for a year
	// yet change the moment the vendored files do.
	var buf bytes.Buffer
	err := page.Execute(&buf, map[string]string{
		"Title":   title,
		"SpecURL": specURL,
		"JS":      Prefix + "/assets/web-components.min.js?v=" + assets["web-components.min.js"].hash[:12],
		"CSS":     Prefix + "/assets/styles.min.css?v=" + assets["styles.min.css"].hash[:12],
	})
	if err != nil {
		panic("docs: render page: " + err.Error()) // static template; cannot fail at run time
	}
	html := buf.Bytes()

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Route on the full path; also accept an already-stripped path so a
		// caller using http.StripPrefix(Prefix, h) still works.
		rest := strings.TrimPrefix(r.URL.Path, Prefix)
		switch {
		case rest == "" || rest == "/":
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache") // cheap to send; keeps asset hashes fresh
			h.Set("X-Content-Type-Options", "nosniff")
			_, _ = w.Write(html)
		case strings.HasPrefix(rest, "/assets/"):
			a, ok := assets[strings.TrimPrefix(rest, "/assets/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			h := w.Header()
			h.Set("Content-Type", a.ctype)
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			h.Set("ETag", `"`+a.hash+`"`)
			h.Set("X-Content-Type-Options", "nosniff")
			// ServeContent handles HEAD, Range and If-None-Match for us.
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
		default:
			http.NotFound(w, r)
		}
	})
}

// loadAssets reads every embedded file into memory, keyed by base name.
func loadAssets() map[string]asset {
	entries, err := assetFS.ReadDir("assets")
	if err != nil {
		panic("docs: read embedded assets: " + err.Error())
	}
	m := make(map[string]asset, len(entries))
	for _, e := range entries {
		body, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil {
			panic("docs: read embedded asset: " + err.Error())
		}
		sum := sha256.Sum256(body)
		m[e.Name()] = asset{
			body:  body,
			ctype: contentTypes[path.Ext(e.Name())],
			hash:  hex.EncodeToString(sum[:]),
		}
	}
	return m
}
