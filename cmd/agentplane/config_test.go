package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// configVars are every AGENTPLANE_* variable parseConfig reads.
var configVars = []string{
	"DATABASE_URL", "REDIS_URL", "HTTP_ADDR", "ADMIN_TOKEN", "DATA_DIR", "ROLE", "LOG_LEVEL",
	"LOG_FORMAT", "WORKERS", "KEY_CACHE_TTL", "STOP_TIMEOUT", "MIGRATE", "DEV", "SECURE_COOKIES", "MASTER_KEY", "WEBHOOK_ALLOW_PRIVATE",
}

// clearConfigEnv unsets every AGENTPLANE_* variable for this test (t.Setenv
// restores them afterwards), so the host environment cannot leak in.
func clearConfigEnv(t *testing.T) {
	t.Helper()
	for _, v := range configVars {
		t.Setenv("AGENTPLANE_"+v, "")
		require.NoError(t, os.Unsetenv("AGENTPLANE_"+v))
	}
}

func TestConfigRejectsBadValuesNamingTheVariable(t *testing.T) {
	tests := []struct {
		env, value string
		dev        bool
	}{
		{"ROLE", "boss", false},
		{"ADMIN_TOKEN", "short-token", false},
		{"ADMIN_TOKEN", "short-token", true},
		{"KEY_CACHE_TTL", "10s", false},
		{"KEY_CACHE_TTL", "-1s", false},
		{"KEY_CACHE_TTL", "soon", false},
		{"STOP_TIMEOUT", "later", false},
		{"HTTP_ADDR", "nonsense", false},
		{"LOG_LEVEL", "loud", false},
		{"LOG_FORMAT", "xml", false},
		{"SECURE_COOKIES", "maybe", false},
		{"WORKERS", "0", false},
		{"WORKERS", "many", false},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			clearConfigEnv(t)
			if tt.dev {
				t.Setenv("AGENTPLANE_DEV", "true")
			}
			t.Setenv("AGENTPLANE_"+tt.env, tt.value)
			_, err := parseConfig(nil)
			require.ErrorContains(t, err, "AGENTPLANE_"+tt.env)
		})
	}
}

func TestConfigFlagsAreValidatedLikeVariables(t *testing.T) {
	clearConfigEnv(t)
	_, err := parseConfig([]string{"--key-cache-ttl", "6s"})
	require.ErrorContains(t, err, "AGENTPLANE_KEY_CACHE_TTL")
	_, err = parseConfig([]string{"--secure-cookies", "yes"})
	require.ErrorContains(t, err, "AGENTPLANE_SECURE_COOKIES")
}

func TestConfigDefaults(t *testing.T) {
	clearConfigEnv(t)
	c, err := parseConfig(nil)
	require.NoError(t, err)
	require.Equal(t, "all", c.Role)
	require.Equal(t, "127.0.0.1:8080", c.HTTPAddr)
	require.Equal(t, defaultDatabaseURL, c.DatabaseURL)
	require.Equal(t, "redis://127.0.0.1:6379/0", c.RedisURL)
	require.False(t, c.redisSet)
	require.Equal(t, 20, c.Workers)
	require.Equal(t, 2*time.Second, c.KeyCacheTTL)
	require.Equal(t, 20*time.Second, c.StopTimeout)
	require.True(t, c.Migrate)
	require.False(t, c.Dev)
	require.True(t, c.SecureCookies, "cookies are Secure outside dev mode")
	require.Empty(t, c.AdminToken, "no admin token unless configured")

	t.Setenv("AGENTPLANE_DEV", "true")
	c, err = parseConfig(nil)
	require.NoError(t, err)
	require.True(t, c.Dev)
	require.False(t, c.SecureCookies, "dev mode serves plain HTTP")

	c, err = parseConfig([]string{"--secure-cookies", "true"})
	require.NoError(t, err)
	require.True(t, c.SecureCookies, "an explicit setting wins over the dev default")
}

func TestConfigFlagsOverrideEnvironment(t *testing.T) {
	clearConfigEnv(t)
	t.Setenv("AGENTPLANE_ROLE", "api")
	t.Setenv("AGENTPLANE_WORKERS", "3")
	t.Setenv("AGENTPLANE_REDIS_URL", "")
	c, err := parseConfig([]string{"--role", "worker", "--http-addr", ":9090"})
	require.NoError(t, err)
	require.Equal(t, "worker", c.Role)
	require.Equal(t, ":9090", c.HTTPAddr)
	require.Equal(t, 3, c.Workers)
	require.Empty(t, c.RedisURL, "an empty REDIS_URL turns Redis off")
	require.True(t, c.redisSet)
}
