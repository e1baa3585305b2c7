package api_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/policy"
)

// operation is one OpenAPI operation with its method and path template.
type operation struct {
	Method, Path string
	Op           *huma.Operation
}

// operations walks the OpenAPI document in a stable order.
func operations(oapi *huma.OpenAPI) []operation {
	var out []operation
	for path, item := range oapi.Paths {
		for method, op := range map[string]*huma.Operation{
			http.MethodGet: item.Get, http.MethodPut: item.Put, http.MethodPost: item.Post,
			http.MethodDelete: item.Delete, http.MethodOptions: item.Options, http.MethodHead: item.Head,
			http.MethodPatch: item.Patch, http.MethodTrace: item.Trace,
		} {
			if op != nil {
				out = append(out, operation{Method: method, Path: path, Op: op})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// platformAdminOnly are permissions deliberately granted to no tenant role.
var platformAdminOnly = []policy.Permission{policy.TenantCreate, policy.PlatformOps}

func TestEveryOperationDeclaresAGrantedPermission(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	enf, err := policy.NewEnforcer()
	require.NoError(t, err)
	admin := policy.Principal{Kind: policy.KindPlatformAdmin, ID: "admin", PlatformAdmin: true}

	ops := operations(h.server.API().OpenAPI())
	require.NotEmpty(t, ops)
	for _, o := range ops {
		name := o.Method + " " + o.Path + " (" + o.Op.OperationID + ")"
		perm, ok := o.Op.Metadata["permission"].(policy.Permission)
		require.True(t, ok, "%s: no policy.Permission in Metadata[\"permission\"]", name)
		require.True(t, perm.Known(), "%s: permission %q is not in policy.Permissions", name, perm)

		granted := false
		for _, r := range policy.Roles {
			allowed, err := enf.AllowedRole(r, "tenant-x", perm)
			require.NoError(t, err)
			granted = granted || allowed
		}
		// Platform-level grants to every authenticated principal count too.
		anyone, err := enf.Allowed(policy.Principal{Kind: policy.KindAPIKey, ID: "k"}, "", policy.DomainPlatform, perm)
		require.NoError(t, err)
		granted = granted || anyone
		if slices.Contains(platformAdminOnly, perm) {
			require.False(t, granted, "%s: %s is meant for the platform admin only", name, perm)
			allowed, err := enf.Allowed(admin, "", policy.DomainPlatform, perm)
			require.NoError(t, err)
			require.True(t, allowed, "%s: platform admin lacks %s", name, perm)
			continue
		}
		require.True(t, granted, "%s: no role is granted %s in grants.csv", name, perm)
	}
}

func TestEveryGrantNamesARealPermission(t *testing.T) {
	t.Parallel()
	enf, err := policy.NewEnforcer()
	require.NoError(t, err)
	grants, err := enf.Grants()
	require.NoError(t, err)
	require.NotEmpty(t, grants)
	for _, g := range grants {
		require.Len(t, g, 5, "grant %v", g)
		if g[2] == "*" && g[3] == "*" {
			continue
		}
		perm := policy.Permission(g[2] + ":" + g[3])
		require.True(t, perm.Known(), "grant %v names unknown permission %q", g, perm)
	}
}

// An operation registered without a permission is refused, not served.
func TestOperationWithoutPermissionIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	huma.Register(h.server.API(), huma.Operation{
		OperationID: "undeclared-get", Method: http.MethodGet, Path: "/v1/undeclared",
	}, func(context.Context, *struct{}) (*struct{}, error) { return nil, nil })

	r := h.do(t, http.MethodGet, "/v1/undeclared", h.admin, nil)
	requireProblem(t, r, http.StatusForbidden, "permission_undeclared")
}

// The offline Spec has exactly the operations the live server serves.
func TestSpecMatchesServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	raw, err := api.Spec()
	require.NoError(t, err)
	spec := string(raw)
	ops := operations(h.server.API().OpenAPI())
	require.Equal(t, len(ops), strings.Count(spec, "operationId: "), "operation count differs:\n%s", spec)
	for _, o := range ops {
		require.Contains(t, spec, "operationId: "+o.Op.OperationID+"\n")
		require.Contains(t, spec, "\n  "+o.Path+":\n")
	}
}
