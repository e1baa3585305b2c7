package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Permission is what an operation needs, written "object:action"
// (for example "member:write"). Every API operation declares exactly one.
type Permission string

// The API permissions. Adding one means granting it in grants.csv.
const (
	TenantCreate Permission = "tenant:create" // platform admin only
	TenantList   Permission = "tenant:list"
	TenantRead   Permission = "tenant:read"
	TenantUpdate Permission = "tenant:update"
	TenantDelete Permission = "tenant:delete"
	MemberRead   Permission = "member:read"
	MemberWrite  Permission = "member:write"
	APIKeyRead   Permission = "apikey:read"
	APIKeyWrite  Permission = "apikey:write"
	AuditRead    Permission = "audit:read"
	SecretRead   Permission = "secret:read" // metadata only; values are never readable
	SecretWrite  Permission = "secret:write"
	ModelRead    Permission = "model:read"
	ModelWrite   Permission = "model:write"
	AgentRead    Permission = "agent:read"
	AgentWrite   Permission = "agent:write"
	ThreadRead   Permission = "thread:read"
	ThreadWrite  Permission = "thread:write"
	RunRead      Permission = "run:read"
	RunWrite     Permission = "run:write" // start and cancel runs
	PolicyRead   Permission = "policy:read"
	PolicyWrite  Permission = "policy:write"
	// PlatformOps covers platform surfaces such as the River UI.
	PlatformOps Permission = "platform:ops"
)

// Permissions lists every permission the API knows, for coverage tests.
var Permissions = []Permission{
	TenantCreate, TenantList, TenantRead, TenantUpdate, TenantDelete,
	MemberRead, MemberWrite, APIKeyRead, APIKeyWrite, AuditRead, PlatformOps,
	SecretRead, SecretWrite, ModelRead, ModelWrite, AgentRead, AgentWrite,
	ThreadRead, ThreadWrite, RunRead, RunWrite, PolicyRead, PolicyWrite,
}

// Known reports whether p is one of Permissions.
func (p Permission) Known() bool { return slices.Contains(Permissions, p) }

// Split returns the object and action halves.
func (p Permission) Split() (obj, act string, err error) {
	obj, act, ok := strings.Cut(string(p), ":")
	if !ok || obj == "" || act == "" {
		return "", "", fmt.Errorf("malformed permission %q", p)
	}
	return obj, act, nil
}
