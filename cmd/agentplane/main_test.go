package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestOpenAPIPrintsTheGoldenDocument(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"openapi"}, &out))
	golden, err := os.ReadFile("../../api/openapi.yaml")
	require.NoError(t, err)
	require.Equal(t, string(golden), out.String(), "agentplane openapi differs from api/openapi.yaml")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"version"}, &out))
	require.True(t, strings.HasPrefix(out.String(), "agentplane "+api.Version), "got %q", out.String())
	require.True(t, strings.HasSuffix(out.String(), "\n"))
}

func TestHelpPrintsUsage(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "-h", "--help"} {
		var out bytes.Buffer
		require.NoError(t, run(t.Context(), []string{arg}, &out))
		require.Equal(t, usage, out.String())
	}
}

func TestBadCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{nil, "missing command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"audit"}, "usage: agentplane audit verify"},
		{[]string{"audit", "repair"}, "usage: agentplane audit verify"},
		{[]string{"audit", "verify", "--no-such-flag"}, "no-such-flag"},
		{[]string{"migrate", "--role", "boss"}, "AGENTPLANE_ROLE"},
		{[]string{"serve", "--workers", "0"}, "AGENTPLANE_WORKERS"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := run(t.Context(), tt.args, &out)
		require.ErrorContains(t, err, tt.want, "args %q", tt.args)
		require.Empty(t, out.String(), "args %q", tt.args)
	}
}
