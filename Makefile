# agentplane — run `make help` for the targets.
SHELL := /bin/bash
GO    ?= go
PKGS  := ./...



.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## Run the server in dev mode (local PostgreSQL, demo tenant, printed credentials)
	$(GO) run ./cmd/agentplane serve --dev

.PHONY: services
services: ## Make sure PostgreSQL and Redis answer (starting private ones if needed)
	@bash scripts/services.sh

.PHONY: test
test: services ## Run the whole test suite against real PostgreSQL, Redis and Chromium
	$(GO) test -count=1 -timeout 15m $(PKGS)

.PHONY: generate
generate: ## Regenerate templ components, sqlc queries and api/openapi.yaml
	$(GO) tool templ generate -path . 
	cd tools/sqlc && $(GO) tool sqlc generate -f ../../sqlc.yaml
	$(GO) run ./cmd/agentplane openapi > api/openapi.yaml.tmp && mv api/openapi.yaml.tmp api/openapi.yaml

.PHONY: verify
verify: generate ## Fail when generated code is stale, or gofmt, go vet or staticcheck complain
	@changed=$$(git status --porcelain -- api/openapi.yaml '*_templ.go' '*/internal/*db/*'); \
	  if [ -n "$$changed" ]; then echo "generated files are stale (run make generate and commit):"; echo "$$changed"; exit 1; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

.PHONY: bench
bench: services ## Run the benchmarks (ratios against baselines measured in the same run)
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

.PHONY: migrate
migrate: ## Apply database migrations to AGENTPLANE_DATABASE_URL
	$(GO) run ./cmd/agentplane migrate

.PHONY: build
build: ## Build bin/agentplane
	$(GO) build -o bin/agentplane ./cmd/agentplane
