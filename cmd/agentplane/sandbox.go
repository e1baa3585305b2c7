package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentplane/agentplane/sandbox"
)

// sandboxTree is the host tree of thread files and skills,
// <DATA_DIR>/sandbox. DATA_DIR is created when missing; as root it gets the
// search bit (not the read bit) for others, because bubblewrap resolves
// bind sources as the unprivileged sandbox identity. What DATA_DIR holds
// keeps its own modes (the master key file is 0600, the dev cluster 0700).
func (c config) sandboxTree() (sandbox.Tree, error) {
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return sandbox.Tree{}, fmt.Errorf("AGENTPLANE_DATA_DIR: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return sandbox.Tree{}, fmt.Errorf("AGENTPLANE_DATA_DIR: %w", err)
	}
	if os.Geteuid() == 0 {
		fi, err := os.Stat(dir)
		if err != nil {
			return sandbox.Tree{}, fmt.Errorf("AGENTPLANE_DATA_DIR: %w", err)
		}
		if perm := fi.Mode().Perm(); perm&0o011 != 0o011 {
			if err := os.Chmod(dir, perm|0o011); err != nil {
				return sandbox.Tree{}, fmt.Errorf("AGENTPLANE_DATA_DIR: %w", err)
			}
		}
	}
	return sandbox.Tree{Root: filepath.Join(dir, "sandbox")}, nil
}

// buildSandboxes builds the configured provider and the manager that
// records and leases sandboxes. Only processes that execute runs need
// them; an api-only process gets nil.
func (a *app) buildSandboxes(owner string) error {
	if a.cfg.Role == "api" {
		return nil
	}
	tree, err := a.cfg.sandboxTree()
	if err != nil {
		return err
	}
	limits := sandbox.Limits{
		WallTime: a.cfg.SandboxWallTime, CPUTime: a.cfg.SandboxCPUTime, MemoryBytes: a.cfg.SandboxMemory,
		MaxProcs: a.cfg.SandboxProcs, OutputBytes: a.cfg.SandboxOutput,
	}
	var provider sandbox.Provider
	switch a.cfg.Sandbox {
	case "host":
		// validate allows host only in dev mode.
		h, err := sandbox.NewHost(tree, limits, a.cfg.Dev)
		if err != nil {
			return fmt.Errorf("AGENTPLANE_SANDBOX: %w", err)
		}
		a.logger.Warn("sandbox provider host: commands run unisolated on this machine (dev only)", slog.String("root", tree.Root))
		provider = h
	default:
		b, err := sandbox.NewBwrap(sandbox.BwrapConfig{Tree: tree, Limits: limits})
		if err != nil && a.cfg.Dev {
			// A newcomer's first `make run` should start; runs simply get
			// no sandbox tools until bubblewrap is installed.
			a.logger.Warn("sandbox tools disabled: bubblewrap is not usable here; install it (apt-get install bubblewrap) or set AGENTPLANE_SANDBOX=host",
				slog.String("error", err.Error()))
			return nil
		}
		if err != nil {
			return fmt.Errorf("AGENTPLANE_SANDBOX bwrap (install bubblewrap, or use host in dev mode): %w", err)
		}
		a.logger.Info("sandbox provider bwrap", slog.String("root", tree.Root), slog.String("controls", b.Mechanism()))
		a.stopProvider = b.Stop
		provider = b
	}
	a.sandboxes, err = sandbox.NewManager(a.pool, provider, sandbox.ManagerConfig{
		Owner: owner, IdleTimeout: a.cfg.SandboxIdleTimeout,
	}, a.logger)
	return err
}

// stopSandboxes tears down the provider's live sandboxes at shutdown
// (after the job runtime stopped, so no command is still starting).
func (a *app) stopSandboxes(ctx context.Context) {
	if a.stopProvider == nil {
		return
	}
	if err := a.stopProvider(ctx); err != nil {
		a.logger.Warn("sandbox shutdown", slog.String("error", err.Error()))
	}
}
