package main

import (
	"net/http"
	"time"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/internal/ratelimit"
	"github.com/agentplane/agentplane/policy"
	"github.com/agentplane/agentplane/web"
)

// loginLimit bounds console login attempts per client address and per email.
var loginLimit = ratelimit.Limit{Rate: 10, Per: time.Minute}

// mountConsole attaches the web console at /console and sends / there.
func (a *app) mountConsole(srv *api.Server, enforcer *policy.Enforcer) error {
	var limiter web.LoginLimiter = ratelimit.NewMemory(loginLimit)
	if a.redis != nil {
		// Shared across replicas, so the limit holds cluster-wide.
		limiter = ratelimit.NewRedis(a.redis, "agentplane:ratelimit:login:", loginLimit)
	}
	console, err := web.New(web.Deps{
		Tenants: a.tenants, Enforcer: enforcer, Logger: a.logger,
		Limiter: limiter, SecureCookies: a.cfg.SecureCookies,
		Secrets: a.vault, Agents: a.agents, Broker: a.broker,
	})
	if err != nil {
		return err
	}
	srv.Mount("/console", console)
	srv.Handle("/", http.RedirectHandler("/console/", http.StatusFound))
	return nil
}
