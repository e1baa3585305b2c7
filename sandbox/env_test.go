package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretName(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"OPENAI_API_KEY": true, "openai_api_key": true, "GITHUB_TOKEN": true,
		"DB_PASSWORD": true, "PGPASSWORD": true, "PGHOST": true, "POSTGRES_USER": true,
		"MYSQL_HOST": true, "DATABASE_URL": true, "REDIS_URL": true, "AMQP_URL": true,
		"MONGODB_URI": true, "SENTRY_DSN": true, "SSH_AUTH_SOCK": true,
		"AGENTPLANE_DATA_DIR": true, "AWS_REGION": true, "CLIENT_SECRET": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "CACHE_DB_URI": true, "LEGACY_DSN": true,
		"HTTPS_PROXY": false, "NO_PROXY": false, "TZ": false, "LANG": false,
		"HOMEPAGE_URL": false, "PYTHONPATH": false,
	}
	for name, want := range tests {
		require.Equal(t, want, SecretName(name), name)
	}
}

func TestEnvPolicyBuild(t *testing.T) {
	t.Parallel()
	server := map[string]string{
		"HTTPS_PROXY":    "http://proxy:3128",
		"TZ":             "UTC",
		"OPENAI_API_KEY": "sk-server",
		"DATABASE_URL":   "postgres://server",
		"AGENTPLANE_X":   "x",
		"LD_PRELOAD":     "/evil.so",
	}
	lookup := func(k string) (string, bool) { v, ok := server[k]; return v, ok }
	tests := []struct {
		name        string
		passthrough []string
		perCall     map[string]string
		home        string
		want        []string
		absent      []string
		err         error
	}{
		{
			name:   "base only",
			want:   []string{"HOME=/mnt/user-data/workspace", "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=dumb", "TMPDIR=/tmp"},
			absent: []string{"OPENAI_API_KEY", "DATABASE_URL", "AGENTPLANE_X", "HTTPS_PROXY"},
		},
		{
			name:        "passthrough is scrubbed",
			passthrough: []string{"HTTPS_PROXY", "TZ", "OPENAI_API_KEY", "DATABASE_URL", "AGENTPLANE_X", "LD_PRELOAD", "PATH", "UNSET_ONE"},
			want:        []string{"HTTPS_PROXY=http://proxy:3128", "TZ=UTC", "PATH=/usr/local/bin:/usr/bin:/bin"},
			absent:      []string{"OPENAI_API_KEY", "DATABASE_URL", "AGENTPLANE_X", "LD_PRELOAD", "UNSET_ONE"},
		},
		{
			name:    "per-call secrets are the point",
			perCall: map[string]string{"GITHUB_TOKEN": "ghp_x", "LANG": "en_US.UTF-8"},
			want:    []string{"GITHUB_TOKEN=ghp_x", "LANG=en_US.UTF-8"},
		},
		{name: "home override", home: "/srv/t/workspace", want: []string{"HOME=/srv/t/workspace"}},
		{name: "per-call PATH refused", perCall: map[string]string{"PATH": "/x"}, err: ErrEnvRefused},
		{name: "per-call loader hook refused", perCall: map[string]string{"LD_PRELOAD": "/x.so"}, err: ErrEnvRefused},
		{name: "per-call bad name", perCall: map[string]string{"A=B": "c"}, err: ErrEnvRefused},
		{name: "per-call leading digit", perCall: map[string]string{"1A": "c"}, err: ErrEnvRefused},
		{name: "per-call NUL value", perCall: map[string]string{"A": "b\x00c"}, err: ErrEnvRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := EnvPolicy{Passthrough: tc.passthrough, Lookup: lookup}.Build(tc.perCall, tc.home)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Subset(t, got, tc.want)
			for _, kv := range got {
				name, _, _ := strings.Cut(kv, "=")
				require.NotContains(t, tc.absent, name)
			}
		})
	}
}
