package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentplane/agentplane/agent"
	"github.com/agentplane/agentplane/agent/builtin"
	"github.com/agentplane/agentplane/agent/llm"
	"github.com/agentplane/agentplane/agent/tools"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/tenants/secrets"
)

// buildAgents wires the vault, the agent service and its runtime. The
// tool registry's sources are listed here in priority order (platform
// config, builtins, MCP, subagents); sources arrive with their issues.
func (a *app) buildAgents(ctx context.Context) error {
	key, err := loadMasterKey(a.cfg, a.logger)
	if err != nil {
		return err
	}
	a.vault, err = secrets.NewVault(a.pool, key, a.logger)
	if err != nil {
		return err
	}
	if err := a.vault.CheckMasterKey(ctx); err != nil {
		return fmt.Errorf("AGENTPLANE_MASTER_KEY: %w", err)
	}
	a.agents, err = agent.NewService(a.pool, agent.Config{}, a.vault, a.logger)
	if err != nil {
		return err
	}
	// Every role needs the thread file tree: the API serves uploads and
	// downloads, workers settle outputs.
	tree, err := a.cfg.sandboxTree()
	if err != nil {
		return err
	}
	a.agents.UseFiles(tree)
	if err := a.agents.UseDelivery(agent.DeliveryConfig{AllowPrivate: a.cfg.WebhookAllowPrivate}); err != nil {
		return err
	}
	a.capabilities = policy.NewCapabilities(a.pool)
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s:%d", host, os.Getpid())
	if err := a.buildSandboxes(owner); err != nil {
		return err
	}
	var sources []tools.Source
	rt := agent.Runtime{
		Models:       llm.New(llm.Config{}),
		Capabilities: a.capabilities,
		Principals:   a.tenants,
		Owner:        owner,
	}
	if a.sandboxes != nil {
		sources = append(sources, builtin.New(a.sandboxes, a.agents, builtin.Config{}))
		rt.Sandboxes = a.sandboxes
	}
	rt.Tools = tools.NewRegistry(sources...)
	if err := a.agents.UseRuntime(rt); err != nil {
		return err
	}
	a.broker = agent.NewBroker(a.pool, a.logger)
	return nil
}
