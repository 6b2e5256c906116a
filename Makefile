# The two commands a new user types: `make demo` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo fuzz bench clean

all: build

deps:
	@./scripts/install-deps.sh --tools-dir $(BUILD)/tools

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Clang's thread-safety analysis of the annotated sources, unit, API-server and kubectl
# end-to-end tests, then each fuzz target for a bounded time.
test: build
	@./scripts/check-thread-safety.sh $(BUILD)
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600 --repeat until-pass:2
	@./scripts/run-fuzz.sh

# Two clusters, peered; a Deployment bursts into the cloud. Ctrl-C stops and cleans up.
# DEMO_FLAGS, e.g. "--dir /tmp/strait-demo --replicas 30".
DEMO_FLAGS ?=
demo: build
	@$(BUILD)/strait demo --keep $(DEMO_FLAGS)

bench: build
	@cmake --build $(BUILD) -j $(JOBS) --target benchmarks
	@./scripts/run-bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-fuzz
