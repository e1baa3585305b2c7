package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var sandboxVars = []string{
	"SANDBOX", "SANDBOX_IDLE_TIMEOUT", "SANDBOX_WALL_TIME", "SANDBOX_CPU", "SANDBOX_MEMORY", "SANDBOX_OUTPUT", "SANDBOX_PROCS",
}

func clearSandboxEnv(t *testing.T) {
	t.Helper()
	clearConfigEnv(t)
	for _, v := range sandboxVars {
		t.Setenv("AGENTPLANE_"+v, "")
		require.NoError(t, os.Unsetenv("AGENTPLANE_"+v))
	}
}

func TestConfigSandboxDefaults(t *testing.T) {
	clearSandboxEnv(t)
	c, err := parseConfig(nil)
	require.NoError(t, err)
	require.Equal(t, "bwrap", c.Sandbox)
	require.Equal(t, 30*time.Minute, c.SandboxIdleTimeout)
	require.Equal(t, 120*time.Second, c.SandboxWallTime)
	require.Equal(t, 60*time.Second, c.SandboxCPUTime)
	require.Equal(t, int64(1<<30), c.SandboxMemory)
	require.Equal(t, int64(1<<20), c.SandboxOutput)
	require.Equal(t, 256, c.SandboxProcs)

	t.Setenv("AGENTPLANE_SANDBOX_MEMORY", "512MiB")
	t.Setenv("AGENTPLANE_SANDBOX_IDLE_TIMEOUT", "5m")
	c, err = parseConfig([]string{"--sandbox-output", "65536", "--sandbox-procs", "64", "--sandbox", "host", "--dev"})
	require.NoError(t, err)
	require.Equal(t, int64(512<<20), c.SandboxMemory)
	require.Equal(t, 5*time.Minute, c.SandboxIdleTimeout)
	require.Equal(t, int64(65536), c.SandboxOutput)
	require.Equal(t, 64, c.SandboxProcs)
	require.Equal(t, "host", c.Sandbox, "host is allowed in dev mode")
}

func TestConfigSandboxRejectsBadValues(t *testing.T) {
	for _, tt := range []struct{ env, value string }{
		{"SANDBOX", "docker"},
		{"SANDBOX", "host"}, // outside dev mode
		{"SANDBOX_IDLE_TIMEOUT", "soon"},
		{"SANDBOX_IDLE_TIMEOUT", "0s"},
		{"SANDBOX_WALL_TIME", "10ms"},
		{"SANDBOX_CPU", "-1s"},
		{"SANDBOX_MEMORY", "lots"},
		{"SANDBOX_MEMORY", "1MiB"},
		{"SANDBOX_MEMORY", "1.5GiB"},
		{"SANDBOX_OUTPUT", "12"},
		{"SANDBOX_PROCS", "many"},
		{"SANDBOX_PROCS", "2"},
	} {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			clearSandboxEnv(t)
			t.Setenv("AGENTPLANE_"+tt.env, tt.value)
			_, err := parseConfig(nil)
			require.ErrorContains(t, err, "AGENTPLANE_"+tt.env)
		})
	}
	clearSandboxEnv(t)
	_, err := parseConfig([]string{"--sandbox-memory", "huge"})
	require.ErrorContains(t, err, "AGENTPLANE_SANDBOX_MEMORY")
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1KiB": 1 << 10, "64MiB": 64 << 20, "2GiB": 2 << 30} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-1", "1GB", "1 TiB", "GiB", "9999999999999GiB"} {
		_, err := parseBytes(in)
		require.Error(t, err, in)
	}
}
