# The two commands a newcomer needs: `make run` and `make test`;
# `make cluster` runs three nodes instead of one.
GO        ?= go
FUZZTIME  ?= 30s
SEEDS     ?= 2000
SOAKSEEDS ?= 10000
# MUTATESEEDS is the sweep each planted bug must fail: the CI-size sweep.
MUTATESEEDS ?= 1000

.PHONY: build test test-race run cluster bench load fuzz verify lint sim sim-soak mutate clean

build:
	$(GO) build ./...

# test is what CI runs (.ci/run): static checks, then every test,
# including the simulator's seeds (each run twice, trace hashes compared),
# then the mutation audit. The slowest package, ./sim, takes 3 minutes
# on two cores and 5.5 when other work shares them (./cmd/chronos 2.5);
# the timeout leaves twice that.
test: verify
	$(GO) test -count=1 -timeout 11m ./...
	$(MAKE) mutate

test-race:
	$(GO) test -count=1 -race -timeout 30m ./...

# run starts one node on 127.0.0.1:7253 with no configuration.
run:
	$(GO) run ./cmd/chronos $(ARGS)

# cluster starts three nodes on 127.0.0.1:7253-7255 and a callback sink
# on 127.0.0.1:9999 until Ctrl-C; ARGS passes flags, for example
# ARGS="-nodes 4 -dir /tmp/chronos-cluster". It builds ./chronos first
# rather than use go run, which exits 1 whenever it is interrupted.
cluster:
	$(GO) build -o chronos ./cmd/chronos
	./chronos cluster $(ARGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./node ./server ./sim

# load starts a local cluster of real processes and measures it under a
# burst of timers due within one window (cmd/chronos-load, which paces the
# creates across it); LOADARGS tunes it, for example
# LOADARGS="-nodes 3 -rf 2 -timers 20000".
LOADARGS ?= -nodes 1 -rf 1 -timers 5000
load:
	$(GO) run ./cmd/chronos-load $(LOADARGS)

fuzz:
	@for p in ./node ./server ./client ./internal/localcluster ./storage; do for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
		$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$p || exit 1; done; done

# verify: formatting, vet, module tidiness; the import boundary of node is
# a test (node/boundary_test.go) and runs with `make test`.
verify:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff

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

clean:
	$(GO) clean ./...
	rm -f chronos
