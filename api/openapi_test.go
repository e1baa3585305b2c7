package api_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/api"
)

// The committed OpenAPI document is the contract SDKs are built from; any
// change to it must be deliberate (make generate) and reviewed.
func TestOpenAPIGolden(t *testing.T) {
	t.Parallel()
	got, err := api.Spec()
	require.NoError(t, err)
	want, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err, "api/openapi.yaml is missing: run make generate")
	require.Equal(t, string(want), string(got), "api/openapi.yaml is stale: run make generate and review the diff")
}
