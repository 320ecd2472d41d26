# devkit — one Go workspace, one binary. `make help` lists the targets.
GO       ?= go
# Builds, tests and releases run on this Go, which has every published standard-library security fix;
# the go command fetches it through the module proxy. Each go.mod's `toolchain` line names it too, for a go
# whose GOTOOLCHAIN is auto; its `go` line stays the minimum users need.
GOTOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN
SHELL    := bash
.SHELLFLAGS := -o pipefail -c
MODULES  := internal kvstore ratelimit supervisor cmd/devkit examples tools
BIN      := bin/devkit
TIMEOUT  ?= 15m
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG := github.com/devkit-go/devkit/cmd/devkit/internal/buildinfo
# bin/devkit is built as the release archives are (.goreleaser.yaml): static (CGO_ENABLED=0), -trimpath, and
# without the symbol table and DWARF (-s -w); the compiler then makes no DWARF for the linker to drop
# (-dwarf=false: the same code). Besides matching what users run, this is what keeps a cold-cache `make demo`
# within two minutes on 2 cores: no C toolchain step, less to compile, a lighter link.
GOBUILD   = CGO_ENABLED=0 $(GO) build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)"
# Each module is tested on its own (GOWORK=off) so that it stays importable alone.
EACH_OF   = set -e; for m in $(1); do echo "== $$m"; (cd $$m && GOWORK=off $(2)); done
EACH      = $(call EACH_OF,$(MODULES),$(1))
# make bench also runs the side-by-side comparison module (redis_rate, ulule/limiter), kept out of ratelimit's deps.
BENCH_MODULES := $(MODULES) ratelimit/benchcmp

.PHONY: test-tags test-redis-suite help build test test-race test-crash test-sup-soak bench envoy-rls fuzz lint fmt cover notices demo demo-redis clean docs cross

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-11s %s\n", $$1, $$2}'

# devkit-sup-monitor, the monitor-only program `devkit sup` runs once per process when it lies beside devkit
# (and reports the same build), is built with it: same flags and version, and the devkit_sup_monitor tag, which
# leaves YAML and net/http out (each linked package costs memory in every monitor; docs/supervisor.md).
MONITOR_PKG := ./cmd/devkit/devkit-sup-monitor
MONITOR_BUILD = $(GOBUILD) -tags devkit_sup_monitor

build: ## build bin/devkit and bin/devkit-sup-monitor
	$(GOBUILD) -o $(BIN) ./cmd/devkit
	$(MONITOR_BUILD) -o bin/devkit-sup-monitor $(MONITOR_PKG)

# ratelimit's Redis store suite also runs against a real `devkit kv serve` of bin/devkit (modules do not import
# each other, so the binary is passed by path).
test: build ## run every module's tests (what CI runs)
	$(call EACH,DEVKIT_BIN=$(CURDIR)/$(BIN) $(GO) test -timeout $(TIMEOUT) ./...)
	@# The house, notices and benchdoc checks read files outside their module, which go test's cache does not watch.
	cd tools && GOWORK=off $(GO) test -count=1 ./house/ ./notices/ ./benchdoc/

test-race: build ## run every module's tests with the race detector
	$(call EACH,DEVKIT_BIN=$(CURDIR)/$(BIN) $(GO) test -race -timeout $(TIMEOUT) ./...)

test-crash: ## the long kill -9 loop of the KV engine (CRASH_ROUNDS, default 300)
	cd kvstore && GOWORK=off CRASH_ROUNDS=$${CRASH_ROUNDS:-300} $(GO) test -count=1 -timeout 60m -run 'TestCrash' -v . | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|rounds'

test-sup-soak: ## the supervisor suite 10 times in a row under -race (SOAK_COUNT, default 10)
	cd supervisor && GOWORK=off $(GO) test -race -count=$${SOAK_COUNT:-10} -timeout 60m ./...

test-redis-suite: build ## Redis's own TCL tests against devkit kv (REDIS_SRC=<redis source tree>; SERVER=redis to compare; UNITS=...)
	@test -n "$(REDIS_SRC)" || { echo "set REDIS_SRC to a Redis source tree of the installed redis-server's version (docs/kvstore-server.md)"; exit 2; }
	REDIS_SRC="$(REDIS_SRC)" DEVKIT=$(BIN) tools/redis-suite.sh $(UNITS)

# envoyproxy/ratelimit's service, the peer of ratelimit/envoyrls's benchmark, pinned; `make envoy-rls` installs it
# into bin/ (it is no module's dependency) and make bench then runs that benchmark (it skips without it).
ENVOY_RLS_VERSION := v1.4.1-0.20260122083618-3fb702589d36
ENVOY_RLS_BIN ?= $(wildcard $(CURDIR)/bin/service_cmd)

envoy-rls: ## install envoyproxy/ratelimit's service into bin/, the peer make bench compares devkit's Envoy RLS with
	GOBIN=$(CURDIR)/bin GOFLAGS=-mod=mod $(GO) install github.com/envoyproxy/ratelimit/src/service_cmd@$(ENVOY_RLS_VERSION)

bench: build ## run the benchmarks and rewrite docs/benchmarks.md and its data, docs/benchmarks-raw.txt
	@mkdir -p bin
	$(call EACH_OF,$(BENCH_MODULES),ENVOY_RLS_BIN=$(ENVOY_RLS_BIN) DEVKIT_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./... ) | tee bin/bench.txt
	$(GO) run ./tools/benchdoc -in bin/bench.txt -out docs/benchmarks.md -raw docs/benchmarks-raw.txt

fuzz: ## run every Fuzz* target of every module briefly (FUZZTIME, default 15s each)
	@set -e; found=0; for m in $(MODULES); do \
		for hit in $$(cd $$m && git grep -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | sed 's/:func /:/'); do \
			pkg=./$$(dirname $${hit%%:*}); t=$${hit#*:}; \
			found=$$((found+1)); echo "== $$m $$pkg $$t"; \
			(cd $$m && GOWORK=off $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $${FUZZTIME:-15s} $$pkg); \
		done; \
	done; echo "fuzz: $$found targets"; [ $$found -gt 0 ]

CROSS_VET := internal kvstore ratelimit supervisor cmd/devkit

# golangci-lint, pinned; .ci/run installs this version with go install.
GOLANGCI_VERSION := v2.15.0
GOLANGCI ?= $(shell command -v golangci-lint 2>/dev/null || echo $$($(GO) env GOPATH)/bin/golangci-lint)
LINT_MODULES := $(MODULES) ratelimit/benchcmp

lint: ## go vet every module (and for windows and darwin), gofmt, and golangci-lint (.golangci.yml)
	$(call EACH,$(GO) vet ./...)
	set -e; for os in windows darwin; do $(call EACH_OF,$(CROSS_VET),GOOS=$$os $(GO) vet ./...); done
	$(MAKE) --no-print-directory test-tags
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if [ ! -x "$(GOLANGCI)" ]; then \
		if [ "$$CI" = true ]; then echo "golangci-lint missing: go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)"; exit 1; fi; \
		echo "golangci-lint not installed, skipped (go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION))"; \
	else $(call EACH_OF,$(LINT_MODULES),$(GOLANGCI) run --config $(CURDIR)/.golangci.yml ./...); fi

# Modules whose whole suite CI also runs on Windows (.github/workflows/ci.yml, job windows).
WINDOWS_TEST_MODULES := internal kvstore supervisor
UNIX_ONLY := "sh"|/bin/sh|command: sh|/proc/|redis-server|redis-cli|redis-benchmark|python3|syscall\.Kill|Setsid|Setpgid|WaitStatus|os\.Symlink|/dev/null

test-tags: ## check that no test file built for windows runs sh, /proc, signals or the Redis tools (those carry //go:build unix)
	@set -e; bad=$$(for m in $(WINDOWS_TEST_MODULES); do (cd $$m && GOOS=windows GOWORK=off $(GO) list \
		-f '{{$$d := .Dir}}{{range .TestGoFiles}}{{$$d}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$$d}}/{{.}} {{end}}' ./...); done \
		| xargs grep -l '^func Test' | xargs grep -nE '$(UNIX_ONLY)' | grep -vE '^[^:]+:[0-9]+:\s*//' || true); \
	if [ -n "$$bad" ]; then echo "test files built for windows use Unix-only things; give them //go:build unix (or split them):"; echo "$$bad"; exit 1; fi

cross: ## build devkit for linux, darwin and windows on amd64 and arm64 into bin/cross/
	set -e; for os in linux darwin windows; do for arch in amd64 arm64; do \
		ext=; [ $$os = windows ] && ext=.exe; \
		echo "== $$os/$$arch"; \
		GOOS=$$os GOARCH=$$arch $(GOBUILD) -o bin/cross/devkit-$$os-$$arch$$ext ./cmd/devkit; \
		GOOS=$$os GOARCH=$$arch $(MONITOR_BUILD) -o bin/cross/devkit-sup-monitor-$$os-$$arch$$ext $(MONITOR_PKG); \
	done; done

notices: ## regenerate THIRD_PARTY_NOTICES from cmd/devkit's module graph (a test fails when it is stale)
	cd tools && GOWORK=off $(GO) run ./notices -module ../cmd/devkit -out ../THIRD_PARTY_NOTICES

docs: ## regenerate docs/cli.md from the command tree (a test fails when it is stale)
	$(GO) run ./cmd/devkit/internal/clidoc/gencli -out docs/cli.md

fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

cover: ## test with coverage, one profile per module under bin/
	@mkdir -p bin
	$(call EACH,$(GO) test -coverprofile=$(CURDIR)/bin/cover-$$(basename $$m).out ./...)

# The demo's binaries: devkit and the demo's HTTP client (examples/stack/hit) in one go build with the
# same flags, so a cold cache compiles the standard library once, and bin/hit stays for the reader to
# rerun the commands the demo shows.
DEMO_BUILD = @echo "== Building bin/devkit and bin/hit, the demo's HTTP client, in one go build (on a cold Go cache this compiles the standard library first: a minute or two), then bin/devkit-sup-monitor"; \
	$(GOBUILD) -o bin/ ./cmd/devkit ./examples/stack/hit; \
	$(MONITOR_BUILD) -o bin/devkit-sup-monitor $(MONITOR_PKG)

demo: ## build bin/devkit and bin/hit, then run the example stack end to end (KEEP=1 keeps its home; REDIS_URL puts the limits in Redis)
	$(DEMO_BUILD)
	./examples/demo.sh $(BIN)

demo-redis: ## the demo with a supervised redis-server and two gateways sharing it
	$(DEMO_BUILD)
	./examples/demo.sh --redis $(BIN)

clean: ## remove build output
	rm -rf bin
