# Verity: make test runs everything (it starts a Docker engine and builds the images first);
# make test-short runs the unit tests alone, without Docker.
SHELL := /bin/bash
export TESTCONTAINERS_RYUK_DISABLED := true
GO ?= go
# Packages that start clusters run one at a time (-p 1): two 3-node clusters do not fit 2 cores,
# and each package checks at its end that nothing labelled io.verity.run is left.
GOTEST := $(GO) test -p 1 -count=1 -timeout 25m

.PHONY: all engine images run test test-short lab clean vet lint-ci chromium

all: test

engine:
	@scripts/engine.sh

images: engine
	@docker/build-images.sh

# One real scenario end to end: the default (3 nodes, the leader of a partition SIGKILLed, a
# verdict). ARGS passes flags to `verity run`, e.g. make run ARGS='--scenario acks1-leader-loss'.
# It builds the default Kafka release's image only (a fresh machine is quicker to its first
# verdict); `make images` builds every release.
run: engine
	@VERITY_KAFKA_VERSIONS=$${VERITY_KAFKA_VERSIONS:-default} docker/build-images.sh
	$(GO) run ./cmd/verity run $(ARGS)

# The lazy filesystem serves FUSE requests on many goroutines: its tests run under the race
# detector too. The example CI workflows are linted (actionlint, a go.mod tool) so they cannot rot.
# examples/librarytest is its own module (a user's suite that imports Verity through a replace),
# which ./... leaves out: it is vetted and run here (one 3-node cluster, under a minute), so that
# using Verity from another module keeps working.
# The packages' tests run one at a time (-p 1), and so would their builds: every test binary is
# built first, in parallel, running no test (a compile error still shows on stderr), which takes
# about half as long on a fresh clone.
test: images lint-ci chromium
	$(GO) test -count=1 -run '^$$' ./... > /dev/null
	$(GOTEST) ./...
	$(GO) test -race -count=1 ./lazyfs
	cd examples/librarytest && $(GO) vet ./... && $(GOTEST) ./...

# The report's test opens report.html in headless Chromium (Debian's package).
chromium:
	@scripts/chromium.sh

lint-ci:
	$(GO) tool actionlint .github/workflows/*.yml

test-short:
	$(GO) test -short ./...

# The lab checks on a real 3-node cluster, verbose.
lab: images
	$(GOTEST) -v -run 'TestLab' ./harness/

vet:
	gofmt -l . | (! grep .) && $(GO) vet ./...

# Remove every container, network and volume that Verity runs left behind (label io.verity.run).
clean: engine
	$(GO) run ./cmd/verity reap
