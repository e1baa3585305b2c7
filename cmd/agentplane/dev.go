package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/llmtest"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants"
)

const (
	demoSlug  = "demo"
	demoEmail = "admin@demo.local"
)

// seedDemo makes dev mode usable at once: a demo tenant, an owner login that
// is also platform admin, a fresh API key, and an admin token, all printed.
// It is idempotent; the password and key are new on every start.
func (a *app) seedDemo(ctx context.Context, stdout io.Writer) error {
	if a.cfg.AdminToken == "" {
		a.cfg.AdminToken = randomToken(32)
	}
	svc := a.tenants
	acc, err := svc.Resolve(ctx, policy.System, demoSlug)
	if errors.Is(err, tenants.ErrNotFound) {
		var t tenants.Tenant
		t, err = svc.CreateTenant(ctx, policy.System, tenants.CreateTenantInput{Slug: demoSlug, Name: "Demo"})
		acc = tenants.Access{Principal: policy.System, Tenant: t}
	}
	if err != nil {
		return fmt.Errorf("seed demo tenant: %w", err)
	}
	password := randomToken(12)
	user, err := svc.EnsureUser(ctx, demoEmail, password, true)
	if err != nil {
		return fmt.Errorf("seed demo user: %w", err)
	}
	_, err = svc.AddMember(ctx, acc, tenants.AddMemberInput{Email: user.Email, Role: policy.RoleOwner})
	if err != nil && !errors.Is(err, tenants.ErrConflict) {
		return fmt.Errorf("seed demo membership: %w", err)
	}
	key, err := svc.CreateAPIKey(ctx, acc, tenants.CreateAPIKeyInput{Name: "dev", Role: policy.RoleOwner})
	if err != nil {
		return fmt.Errorf("seed demo api key: %w", err)
	}
	base := "http://" + a.displayAddr()
	if err := a.seedDemoModel(ctx, acc, base+devModelPrefix+"/v1"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, `
agentplane dev mode — for development only
  console      %s/console/
  login        %s / %s
  api key      %s   (owner of tenant %q)
  admin token  %s
  api docs     %s/docs
  river ui     %s/admin/river (log in to the console first)
  try:         curl -H 'Authorization: Bearer %s' %s/v1/tenants/%s
  demo model   %s%s/v1 (scripted; the demo tenant's default model)

`, base, demoEmail, password, key.Key, demoSlug, a.cfg.AdminToken, base, base, key.Key, base, demoSlug, base, devModelPrefix)
	return nil
}

// devModelPrefix is where dev mode serves the scripted model, so a newcomer
// sees complete runs without any model API key.
const devModelPrefix = "/dev/fakellm"

// seedDemoModel points the demo tenant's default model endpoint at the
// scripted model this process serves (the address may change between starts).
func (a *app) seedDemoModel(ctx context.Context, acc tenants.Access, url string) error {
	yes := true
	_, err := a.agents.GetModel(ctx, acc, "demo")
	if errors.Is(err, tenants.ErrNotFound) {
		_, err = a.agents.CreateModel(ctx, acc, agent.ModelInput{Name: "demo", BaseURL: url, Model: llmtest.DefaultModel, Default: &yes})
	} else if err == nil {
		_, err = a.agents.UpdateModel(ctx, acc, "demo", agent.ModelPatch{BaseURL: &url, Default: &yes})
	}
	if err != nil {
		return fmt.Errorf("seed demo model: %w", err)
	}
	return nil
}

func (a *app) displayAddr() string {
	host, port, err := net.SplitHostPort(a.cfg.HTTPAddr)
	if err != nil || host == "" || host == "0.0.0.0" || host == "::" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return a.cfg.HTTPAddr
}
