package ui

// View models of the tenant pages. Times and statuses arrive preformatted;
// the Can* flags decide which action forms exist at all, so a role that may
// not use an action never sees it (the handlers still enforce it).

// MembersView is the members page.
type MembersView struct {
	Tenant   string
	Members  []MemberRow
	CanWrite bool
	// Roles are the roles the viewer may grant, most powerful first.
	Roles    []string
	Form     InviteForm
	Notice   Notice
	NextPage string
}

// MemberRow is one member.
type MemberRow struct {
	ID     string
	Email  string
	Role   string
	Joined string
	// Editable is false when the viewer cannot change this member (no
	// member:write, or the member outranks the viewer).
	Editable bool
}

// InviteForm keeps what was typed when an invitation fails; never the password.
type InviteForm struct {
	Email string
	Role  string
}

// APIKeysView is the API-keys page.
type APIKeysView struct {
	Tenant   string
	Keys     []APIKeyRow
	CanWrite bool
	Roles    []string
	Form     KeyForm
	// NewKey is set only in the response that created it.
	NewKey   *NewKey
	Notice   Notice
	NextPage string
}

// APIKeyRow is one key's metadata.
type APIKeyRow struct {
	ID       string
	Name     string
	Role     string
	Prefix   string
	Created  string
	LastUsed string
	Expires  string
	// Status is "active", "expired" or "revoked".
	Status    string
	Revocable bool
}

// KeyForm keeps what was typed when a key creation fails.
type KeyForm struct {
	Name    string
	Role    string
	Expires string
}

// NewKey is the one-time display of a created key's secret.
type NewKey struct {
	Name string
	Key  string
}

// AuditView is the audit log page.
type AuditView struct {
	Tenant   string
	Filter   AuditFilter
	Entries  []AuditRow
	Notice   Notice
	NextPage string
}

// AuditFilter is the filter form's values.
type AuditFilter struct {
	Action     string
	Actor      string
	TargetKind string
}

// AuditRow is one audit entry.
type AuditRow struct {
	Seq  string
	Time string
	// Actor is a readable name (an email, a key's name) when known;
	// ActorID is the raw principal, which the actor filter takes.
	Actor   string
	ActorID string
	Action  string
	Target  string
	Diff    string
}

// TenantsView is the platform admin's tenants page.
type TenantsView struct {
	Tenants  []TenantRow
	Form     TenantForm
	Notice   Notice
	NextPage string
}

// TenantRow is one tenant.
type TenantRow struct {
	Slug    string
	Name    string
	Status  string
	Created string
}

// TenantForm keeps what was typed when a creation fails.
type TenantForm struct {
	Slug string
	Name string
}
