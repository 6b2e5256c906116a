# The commands a new user types: `make demo` and `make test`; `make image` for the container.
BUILD ?= build
JOBS ?= $(shell nproc)
# A clean build compiles the heavy targets in unity batches (CMakeLists.txt, STRAIT_UNITY).
CMAKE_FLAGS ?= -DSTRAIT_UNITY=ON
# ccache keys leave out the build directory, so another checkout of the same sources (a CI
# clone, a second worktree) reuses the objects; CMakeLists.txt sets base_dir to the checkout.
export CCACHE_NOHASHDIR ?= 1
# ctest's parallelism: one test per core. The end-to-end tests wait on sockets and processes,
# but their miniclusters, agents and kubectl still use about 0.7 of a core per running test:
# three at once saturated two cores and gained nothing (docs/testing.md).
TEST_JOBS ?= $(JOBS)
# Seconds each fuzz target runs: briefly in `make test`, longer in `make fuzz`.
TEST_FUZZ_SECONDS ?= 5
FUZZ_SECONDS ?= 120

.PHONY: all deps configure build test demo fuzz image bench clean

all: build

deps:
	@./scripts/install-deps.sh --tools-dir $(BUILD)/tools

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null

# A clash between two sources of one unity batch (a new file defining a
# file-local name a neighbour defines too) must not stop the build: it is reported, and the
# build is done again without unity batches.
build: configure
	@cmake --build $(BUILD) -j $(JOBS) || { \
	  echo "make: the unity build failed (above). If the error is a redefinition of an" \
	       "{anonymous}:: name, add one of the two sources to STRAIT_UNITY_ALONE in" \
	       "CMakeLists.txt. Building again without unity batches." >&2; \
	  cmake -S . -B $(BUILD) -DSTRAIT_UNITY=OFF >/dev/null && \
	  cmake --build $(BUILD) -j $(JOBS); }

# Unit, API-server and kubectl end-to-end tests and clang's thread-safety analysis of the
# annotated sources (the ctest tests thread_safety_check_*), then each fuzz target for a few
# seconds. The fuzz targets (their own clang + ASan build in build-fuzz) are built while ctest
# runs, at the lowest CPU priority (nice 19): the end-to-end tests mostly wait, and whenever
# they want the CPU they get it first. That build's output goes to $(BUILD)/fuzz-build.log,
# shown if it fails; if ctest fails or is interrupted (Ctrl-C), the build is stopped (it runs
# in a session of its own, which the terminal's signals do not reach).
test: build
	@rm -f $(BUILD)/fuzz-build.log; \
	setsid nice -n 19 ./scripts/run-fuzz.sh --build-only >$(BUILD)/fuzz-build.log 2>&1 & \
	fuzz=$$!; \
	trap 'kill -TERM -'$$fuzz' 2>/dev/null; exit 130' INT TERM; \
	(cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 --repeat until-pass:2); \
	rc=$$?; \
	if [ $$rc -ne 0 ]; then kill -TERM -$$fuzz 2>/dev/null; wait $$fuzz; exit $$rc; fi; \
	if ! wait $$fuzz; then \
	  cat $(BUILD)/fuzz-build.log >&2; echo "make: the fuzz build failed (above)" >&2; exit 1; \
	fi; \
	FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) ./scripts/run-fuzz.sh --no-build

# A longer fuzzing campaign: FUZZ_SECONDS per target, corpora kept in build-fuzz/corpus.
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/run-fuzz.sh

# The agent's OCI image from the built binary (scripts/build-image.sh): $(BUILD)/image/oci
# (an OCI layout) and $(BUILD)/image/strait-image.tar, named as the chart's default image.
image: build
	@./scripts/install-deps.sh --tools-dir $(BUILD)/tools --image
	@./scripts/build-image.sh --binary $(BUILD)/strait --out $(BUILD)/image

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
