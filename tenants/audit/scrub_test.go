package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/internal/pgtest"
	"github.com/agentplane/agentplane/tenants/audit"
)

type credentials struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

func TestRecordScrubsSecrets(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	tenantID := newTenant(t, tx)
	diff := map[string]any{
		"name":            "prod",
		"Password":        "hunter2",
		"db_password":     "hunter2",
		"clientSecret":    "s3cr3t",
		"SECRETS":         []any{"a", "b"},
		"access_token":    map[string]any{"nested": "tok"},
		"key":             "ap_abc_secret",
		"KEY":             "ap_abc_secret",
		"value":           "sk-live",
		"api_key":         "sk-live",
		"api_key_secret":  "OPENAI_KEY",
		"keyboard":        "kept: only exact 'key' matches",
		"values":          "kept: only exact 'value' matches",
		"count":           3,
		"nil_secret":      nil,
		"headers":         []any{map[string]any{"name": "Authorization", "value": "Bearer xyz"}},
		"old":             map[string]any{"config": map[string]any{"webhook": map[string]any{"Signing_Secret": "whsec"}}},
		"struct_password": credentials{User: "u", Password: "p"},
		"login":           credentials{User: "u", Password: "p"},
	}
	require.NoError(t, audit.Record(t.Context(), tx, audit.Event{TenantID: tenantID, Actor: alice, Action: "thing.update", Diff: diff}))

	page, err := audit.List(t.Context(), tx, tenantID, audit.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	require.JSONEq(t, `{
		"name": "prod",
		"Password": "[redacted]",
		"db_password": "[redacted]",
		"clientSecret": "[redacted]",
		"SECRETS": "[redacted]",
		"access_token": "[redacted]",
		"key": "[redacted]",
		"KEY": "[redacted]",
		"value": "[redacted]",
		"api_key": "[redacted]",
		"api_key_secret": "[redacted]",
		"keyboard": "kept: only exact 'key' matches",
		"values": "kept: only exact 'value' matches",
		"count": 3,
		"nil_secret": "[redacted]",
		"headers": [{"name": "Authorization", "value": "[redacted]"}],
		"old": {"config": {"webhook": {"Signing_Secret": "[redacted]"}}},
		"struct_password": "[redacted]",
		"login": {"user": "u", "password": "[redacted]"}
	}`, string(page.Events[0].Diff))

	// The caller's map is not modified.
	require.Equal(t, "hunter2", diff["Password"])
	// The chain hashes the scrubbed diff, so it still verifies.
	require.True(t, verifyTenant(t, tx, tenantID).OK())
}
