// Command agentplane is the composition root: it reads configuration, opens
// the pool, builds River and the services, and serves HTTP. Subcommands:
// serve, migrate, openapi, audit verify, version.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/agentplane/agentplane/api"
)

var randRead = rand.Read

const usage = `usage: agentplane <command> [flags]

commands:
  serve          run the API, console and job workers (--dev for development)
  migrate        apply database migrations and exit
  openapi        print the OpenAPI document (YAML)
  audit verify   check every tenant's audit hash chain (--tenant SLUG for one)
  fakellm        serve a scripted OpenAI-compatible model endpoint (--addr, --script)
  version        print the version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agentplane:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("missing command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout)
	case "migrate":
		return migrateCmd(ctx, args[1:])
	case "openapi":
		spec, err := api.Spec()
		if err != nil {
			return err
		}
		_, err = stdout.Write(spec)
		return err
	case "audit":
		if len(args) < 2 || args[1] != "verify" {
			return fmt.Errorf("usage: agentplane audit verify [--tenant SLUG]")
		}
		return auditVerify(ctx, args[2:], stdout)
	case "fakellm":
		return fakellm(ctx, args[1:], stdout)
	case "version":
		fmt.Fprintln(stdout, "agentplane", version())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return api.Version + "+" + s.Value[:12]
			}
		}
	}
	return api.Version
}
