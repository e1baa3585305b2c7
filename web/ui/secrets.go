package ui

// SecretsView is the secrets page. It carries metadata only: a value never
// reaches a template, not even the one just submitted.
type SecretsView struct {
	Tenant   string
	Secrets  []SecretRow
	CanWrite bool
	// NamePattern is the HTML pattern a name must match.
	NamePattern string
	Form        SecretForm
	Notice      Notice
	NextPage    string
}

// SecretRow is one secret's current version.
type SecretRow struct {
	Name        string
	Version     string
	Fingerprint string
	Updated     string
}

// SecretForm keeps the name typed into a failed form; never the value.
type SecretForm struct {
	Name string
}
