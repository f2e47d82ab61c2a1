# The two commands a newcomer needs: `make run` and `make test`;
# `make cluster` runs three nodes instead of one.
GO        ?= go
FUZZTIME  ?= 30s
SEEDS     ?= 2000
SOAKSEEDS ?= 10000
# MUTATESEEDS is the sweep each planted bug must fail: the CI-size sweep.
MUTATESEEDS ?= 1000
# NEMESISSEED fixes the nemesis run's schedule and workload;
# NEMESISARGS passes more flags (chronos-nemesis -h).
NEMESISSEED ?= 1
NEMESISARGS ?=
SOAKROUNDS  ?= 40
# PARALLEL is how many tests marked t.Parallel run at once: only the
# real-process tests of cmd/chronos are, which wait on real timers (pops
# seconds apart), not on the CPU, so more than the cores run together.
PARALLEL    ?= 8

# RACEPKGS are the packages whose own code starts goroutines (servers,
# clients, the process launchers, the disk log under concurrent writers):
# make test runs their tests under the race detector. node, netsim,
# checker and sim run each history on one goroutine by design
# (node/boundary_test.go keeps goroutines out of node); sim's one
# concurrent part, the sweep, is raced on a few seeds by race-sim.
RACEPKGS ?= ./server/... ./client ./storage ./internal/... ./cmd/chronos ./cmd/chronos-load ./cmd/chronosctl

# STATICCHECK is pinned in tools/go.mod, a module of its own so that the
# linter's dependencies never enter the service's build: go tool fetches
# and builds it from the module proxy on first use.
STATICCHECK = $(GO) tool -modfile=tools/go.mod staticcheck

# SUDO is empty for root (CI), sudo for anyone else.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: build test test-race race race-sim run cluster bench bench-peer load fuzz verify lint staticcheck test-deps sim sim-soak mutate nemesis nemesis-soak clean

build:
	$(GO) build ./...

# test is what CI runs (.ci/run): what the tests need beyond Go
# (test-deps), static checks (staticcheck among them), then every test,
# including the simulator's seeds (each run twice, trace hashes compared)
# and the report's check in headless Chromium, then the packages with
# goroutines under the race detector, then the mutation audit, then the
# nemesis (real processes in network namespaces; it prints SKIP where it
# cannot make them, as without root). On two cores the slowest packages
# are ./sim (2 minutes) and ./cmd/chronos (1.2, its real-process tests
# side by side), the audit takes 2 and the nemesis 5. The test timeout
# leaves ./sim four times its share, for a machine shared with other
# work.
test: test-deps verify
	$(GO) test -count=1 -parallel $(PARALLEL) -timeout 11m ./...
	$(MAKE) race
	$(MAKE) mutate
	$(MAKE) nemesis

# race runs the tests of the packages with goroutines under the race
# detector; test-race runs every package so (long: the simulator's seeds
# run about ten times slower).
race: race-sim
	$(GO) test -count=1 -race -parallel $(PARALLEL) -timeout 20m $(RACEPKGS)

race-sim:
	$(GO) test -count=1 -race -timeout 10m -run '^TestSeeds$$' ./sim -seeds 8

test-race:
	$(GO) test -count=1 -race -timeout 60m ./...

# test-deps installs what the tests need beyond Go, on Debian: Chromium,
# which TestHTMLInBrowser loads the failure report in. CI runs it first.
test-deps:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium; }

# run starts one node on 127.0.0.1:7253 with no configuration, until
# Ctrl-C. Like cluster, it builds ./chronos and runs it rather than use go
# run, which exits 1 whenever it is interrupted (and make reports an error).
run:
	$(GO) build -o chronos ./cmd/chronos
	./chronos $(ARGS)

# cluster starts three nodes on 127.0.0.1:7253-7255 and a callback sink
# on 127.0.0.1:9999 until Ctrl-C; ARGS passes flags, for example
# ARGS="-nodes 4 -dir /tmp/chronos-cluster". It builds ./chronos first
# rather than use go run, which exits 1 whenever it is interrupted.
cluster:
	$(GO) build -o chronos ./cmd/chronos
	./chronos cluster $(ARGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./wire ./node ./server ./sim

# load starts a local cluster of real processes and measures it under a
# burst of timers due within one window (cmd/chronos-load, which paces the
# creates across it); LOADARGS tunes it, for example
# LOADARGS="-nodes 3 -rf 2 -timers 20000".
LOADARGS ?= -nodes 1 -rf 1 -timers 5000
load:
	$(GO) run ./cmd/chronos-load $(LOADARGS)

# bench-peer measures issue 29's rows against the peer a user would
# pick, asynq on redis-server (tools/peer, a Go module of its own so that
# asynq never enters the service's build): for each row chronos-load, then
# the peer, each beside its own baselines (a bare net/http server, a plain
# client posting to the same sink) and the load average. It needs
# redis-server on PATH (Debian: apt-get install redis-server) and installs
# nothing: without it, it says so and skips. PEERBIN, when set, is the
# chronos binary to measure (default: this tree's cmd/chronos).
PEERBURST ?= 30000
PEERHOLD  ?= 1000000
PEERBIN   ?=
bench-peer:
	@if ! command -v redis-server >/dev/null; then \
		echo "bench-peer: SKIP: needs redis-server on PATH (Debian: apt-get install redis-server); it installs nothing"; exit 0; fi; \
	set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	$(GO) build -o $$d/chronos-load ./cmd/chronos-load; \
	(cd tools/peer && $(GO) build -o $$d/peer .); \
	bin="$(PEERBIN)"; if [ -z "$$bin" ]; then $(GO) build -o $$d/chronos ./cmd/chronos; bin=$$d/chronos; fi; \
	echo "== burst: $(PEERBURST) timers due within 1 s, one node"; \
	$$d/chronos-load -bin $$bin -nodes 1 -rf 1 -timers $(PEERBURST) -window 1s; \
	$$d/peer -timers $(PEERBURST) -window 1s -concurrency 64; \
	echo "== unpaced: $(PEERHOLD) creates, 32 clients, one node, defaults"; \
	$$d/chronos-load -bin $$bin -hold -bare -nodes 1 -rf 1 -timers $(PEERHOLD) -concurrency 32; \
	$$d/peer -hold -timers $(PEERHOLD) -concurrency 32; \
	echo "== three nodes rf 2"; \
	$$d/chronos-load -bin $$bin -nodes 3 -rf 2 -timers 20000

fuzz:
	@for p in ./wire ./node ./server ./server/config ./client ./internal/localcluster ./storage ./nemesis; do for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$p || exit 1; done; done

# verify: formatting, vet, module tidiness (the tools module's too),
# staticcheck; the import boundary of node is a test
# (node/boundary_test.go) and runs with `make test`.
verify:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	$(MAKE) staticcheck

# staticcheck runs staticcheck's default checks (bugs, simplifications,
# unused code, style) on every package.
staticcheck:
	$(STATICCHECK) ./...

lint: verify

# sim sweeps many seeds; sim-soak is the long sweep, not run in CI.
sim:
	$(GO) run ./cmd/chronos-sim sweep -seeds $(SEEDS)

sim-soak:
	$(GO) run ./cmd/chronos-sim sweep -seeds $(SOAKSEEDS)

# mutate plants each bug of mutations/ in a copy of the repository and
# requires the simulator's sweep alone to catch it (mutations/README.md).
mutate:
	$(GO) run ./cmd/chronos-mutate -seeds $(MUTATESEEDS)

# nemesis runs five real nodes, each in a network namespace of its own,
# through one round of each fault (about five minutes) and judges the
# history with the checker's real-run mode (docs/nemesis.md); it needs
# root and /dev/net/tun, and says SKIP without them. nemesis-soak runs
# SOAKROUNDS rounds.
nemesis:
	$(GO) run ./cmd/chronos-nemesis -seed $(NEMESISSEED) $(NEMESISARGS)

nemesis-soak:
	$(GO) run ./cmd/chronos-nemesis -seed $(NEMESISSEED) -rounds $(SOAKROUNDS) $(NEMESISARGS)

clean:
	$(GO) clean ./...
	rm -f chronos
