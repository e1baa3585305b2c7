package ui

import "github.com/a-h/templ"

// Page is one console screen: the chrome around a body. Handlers render
// either the whole Page or, for htmx requests, only Body.
type Page struct {
	Title string
	// Chrome is the logged-in header; nil on the login and pre-login pages.
	Chrome *Chrome
	Assets Assets
	Body   templ.Component
}

// Assets are the versioned URLs of the embedded static files.
type Assets struct {
	CSS  string
	HTMX string
}

// Chrome is the header of a logged-in page.
type Chrome struct {
	Email string
	// Tenant is the current tenant's slug; empty outside a tenant.
	Tenant  string
	Tenants []TenantOption
	Nav     []NavLink
}

// TenantOption is one entry of the tenant switcher.
type TenantOption struct {
	Slug    string
	Name    string
	Current bool
}

// NavLink is one navigation entry.
type NavLink struct {
	Label  string
	Href   string
	TestID string
	Active bool
}

// Notice is a message above a page's content: the outcome of a form.
// Code is the domain's stable error code (e.g. "role_escalation") when
// there is one, so tests and scripts need not match prose.
type Notice struct {
	Error bool
	Code  string
	Text  string
}

// IsZero reports whether there is nothing to show.
func (n Notice) IsZero() bool { return n.Text == "" }

// LoginView is the login form.
type LoginView struct {
	Email  string
	Notice Notice
}

// ErrorView is a full-page refusal or failure (403, 404, 500...).
type ErrorView struct {
	Status  int
	Title   string
	Message string
}

// HomeView is shown to a user who belongs to no tenant yet.
type HomeView struct {
	Email string
}
