#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cpp) with clang++, ASan and UBSan in a
# separate build dir and runs each one for a bounded time.
#
#   FUZZ_SECONDS  seconds per target (default 20; `make test` runs 5, `make fuzz` 120)
#   FUZZ_BUILD    build dir (default <repo>/build-fuzz); corpora in $FUZZ_BUILD/corpus/<target>,
#                 crash inputs in $FUZZ_BUILD/artifacts/<target>/, logs in $FUZZ_BUILD/logs/
#   FUZZ_CXX      compiler (default clang++)
#   JOBS          build parallelism (default nproc)
#   FUZZ_JOBS     targets run at once (default nproc)
#
# Seed inputs, if any, are read from tests/fuzz/corpus/<target>/ (never written).
# Prints one summary line per target; exits non-zero if a target fails to build, crashes,
# leaks, trips a sanitizer or hangs.
#
#   --build-only  configure and build the targets, run none (`make test` builds them at
#                 low priority while ctest runs, then runs them with --no-build)
#   --no-build    run the targets already built in FUZZ_BUILD
set -euo pipefail

build_step=1
run_step=1
case "${1:-}" in
  "") ;;
  --build-only) run_step=0 ;;
  --no-build) build_step=0 ;;
  *)
    echo "run-fuzz: unknown argument '$1' (--build-only or --no-build)" >&2
    exit 2
    ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
SECONDS_PER_TARGET=${FUZZ_SECONDS:-20}
CXX_BIN=${FUZZ_CXX:-clang++}
JOBS=${JOBS:-$(nproc)}

shopt -s nullglob
sources=("$ROOT"/tests/fuzz/*_fuzz.cpp)
if [ "${#sources[@]}" -eq 0 ]; then
  echo "run-fuzz: no tests/fuzz/*_fuzz.cpp targets"
  exit 0
fi
if ! command -v "$CXX_BIN" >/dev/null; then
  echo "run-fuzz: $CXX_BIN not found (scripts/install-deps.sh installs clang)" >&2
  exit 1
fi

targets=()
for src in "${sources[@]}"; do
  targets+=("$(basename "$src" .cpp)")
done

build_targets() {
  mkdir -p "$BUILD"
  echo "run-fuzz: configuring $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_COMPILER="$CXX_BIN" \
    -DSTRAIT_FUZZ=ON \
    -DSTRAIT_UNITY=ON \
    -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    >"$BUILD/configure.log" 2>&1 || {
    cat "$BUILD/configure.log" >&2
    echo "run-fuzz: configure failed" >&2
    exit 1
  }

  # Only the fuzz targets (and the libraries they need), not the tests or benchmarks.
  echo "run-fuzz: building ${targets[*]}"
  if ! cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" 2>&1 | tee "$BUILD/build.log"; then
    # A clash between two sources of one unity batch (the compiler says "redefinition" or
    # "ambiguous"): said, then built without unity batches. Any other failure (a compile
    # error, a missing symbol) would fail again that way, after a much longer build.
    if ! grep -qE 'redefinition of|conflicting declaration|is ambiguous' "$BUILD/build.log"; then
      echo "run-fuzz: the build failed (above)" >&2
      exit 1
    fi
    echo "run-fuzz: the unity build failed (above); building again without unity batches" \
         "(a redefinition of an {anonymous}:: name: see STRAIT_UNITY_ALONE in CMakeLists.txt)" >&2
    cmake -S "$ROOT" -B "$BUILD" -DSTRAIT_UNITY=OFF >>"$BUILD/configure.log" 2>&1
    cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
  fi
}

if [ "$build_step" -eq 1 ]; then
  build_targets
fi
if [ "$run_step" -eq 0 ]; then
  exit 0
fi
for t in "${targets[@]}"; do
  if [ ! -x "$BUILD/fuzz-bin/$t" ]; then
    echo "run-fuzz: $BUILD/fuzz-bin/$t not built (run without --no-build)" >&2
    exit 1
  fi
done

mkdir -p "$BUILD/logs"
# Runs one target; its summary line goes to logs/<target>.summary, exit status 1 on failure.
run_target() {
  local t=$1
  local bin="$BUILD/fuzz-bin/$t"
  local corpus="$BUILD/corpus/$t"
  local artifacts="$BUILD/artifacts/$t/"
  local log="$BUILD/logs/$t.log"
  mkdir -p "$corpus" "$artifacts"
  local seeds=()
  if [ -d "$ROOT/tests/fuzz/corpus/$t" ]; then
    seeds+=("$ROOT/tests/fuzz/corpus/$t")
  fi
  echo "run-fuzz: running $t for ${SECONDS_PER_TARGET}s"
  local rc=0
  # libFuzzer stops itself after -max_total_time; the outer timeout only catches a hang
  # outside its control (e.g. in a static initializer).
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
    timeout --signal=KILL $((SECONDS_PER_TARGET + 120)) \
    "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" "${seeds[@]}" \
    >"$log" 2>&1 || rc=$?

  stat() { sed -n "s/^stat::$1:[[:space:]]*//p" "$log" | tail -1; }
  local runs speed rss files
  runs=$(stat number_of_executed_units)
  speed=$(stat average_exec_per_sec)
  rss=$(stat peak_rss_mb)
  files=$(find "$corpus" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    printf '%-20s OK     %8s execs/s %10s runs  corpus %5s files  rss %4s MB\n' \
      "$t" "${speed:-?}" "${runs:-?}" "$files" "${rss:-?}" >"$BUILD/logs/$t.summary"
    return 0
  fi
  local crash
  crash=$(find "$artifacts" -type f -newer "$bin" | head -1)
  printf '%-20s FAILED exit %s  %s execs/s  input: %s  log: %s\n' \
    "$t" "$rc" "${speed:-?}" "${crash:-none}" "$log" >"$BUILD/logs/$t.summary"
  echo "run-fuzz: $t failed (exit $rc); last lines of $log:" >&2
  tail -n 40 "$log" >&2
  return 1
}

# FUZZ_JOBS targets at a time (default: one per core); each libFuzzer process is one thread.
jobs_max=${FUZZ_JOBS:-$(nproc)}
failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
summary=()
for t in "${targets[@]}"; do
  summary+=("$(cat "$BUILD/logs/$t.summary" 2>/dev/null || echo "$t: no result")")
done

echo "run-fuzz: summary (${SECONDS_PER_TARGET}s per target)"
printf '  %s\n' "${summary[@]}"
exit "$failed"
