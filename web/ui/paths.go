package ui

import "net/url"

// Prefix is where the composition root mounts the console. Links are
// absolute so that fragments swapped in by htmx stay correct wherever they
// land.
const Prefix = "/console"

// Path returns a console URL, e.g. Path("/login").
func Path(p string) string { return Prefix + p }

// TenantPath returns the URL of a tenant section, e.g.
// TenantPath("acme", "api-keys") or TenantPath("acme", "members", id, "role").
func TenantPath(slug string, parts ...string) string {
	p := Prefix + "/t/" + url.PathEscape(slug)
	for _, part := range parts {
		p += "/" + url.PathEscape(part)
	}
	return p
}

// WithQuery appends a query string when q is not empty.
func WithQuery(p string, q url.Values) string {
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}
