#!/usr/bin/env bash
# Runs the benchmarks built in <build-dir> and prints their figures (`make bench`), then one
# table of the headline figures, each beside its aim (scripts/bench-summary.py).
# Builds nothing: `make bench` builds first.
#
#   ./scripts/run-bench.sh <build-dir> [extra apiserver_bench flags, e.g. --pods 2000]
#
# Every program runs in its JSON mode; its JSON lines are kept, one per line prefixed by the
# program's name and a tab, in $BENCH_RESULTS (default <build-dir>/bench-results/<UTC time>.tsv)
# and the summary is made from that file, so `scripts/bench-summary.py FILE` prints it again.
# Its other output (progress, notes) passes through. BENCH_JSON=1 also prints the JSON lines.
#
# What runs, in order (about an hour on the 2-core machine; nothing else should run beside):
#   the API server in memory and --durable; in-band peering; the scheduler with simulated
#   kubelets (1,000 nodes, 30,000 Pods); the tunnel against wireguard-go (root only); the
#   informer cache; offloading waves of 1,000, 10,000 and 39,000 Pods (50,000 on the virtual
#   node) at the 500/s target, then 1,000 at 150/s for the added latency; the agent /metrics
#   scrape; a Deployment of 1,000, 3,000 and 10,000 replicas offloaded vs created directly in
#   the provider (OFFLOAD_COMPARE_10K=0 leaves out 10,000); one consumer with 20 providers and
#   one provider with 20 consumers; Service reflection; failover with the default knobs (about
#   six minutes), then a 10 s grace; the offload latency with an OffloadingOverride.
#
# Exits non-zero if a run failed (write errors, incomplete watchers, no server).
set -euo pipefail

BUILD=${1:?usage: run-bench.sh <build-dir> [apiserver_bench flags]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
STRAIT="$BUILD/strait"
if [ ! -x "$STRAIT" ]; then
  echo "run-bench: $STRAIT not built (run: make bench)" >&2
  exit 1
fi
extra=("$@")

RESULTS=${BENCH_RESULTS:-$BUILD/bench-results/$(date -u +%Y%m%dT%H%MZ).tsv}
mkdir -p "$(dirname "$RESULTS")"
: >"$RESULTS"
printf 'run\t{"started": "%s", "cores": %s, "load_average": "%s", "commit": "%s"}\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)" >>"$RESULTS"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# JSON lines: $RESULTS"

status=0
# bench NAME PROGRAM ARGS...: runs one benchmark program; its JSON lines go to $RESULTS.
bench() {
  local name=$1 program=$2
  shift 2
  if [ ! -x "$program" ]; then
    echo "run-bench: $program not built (run: make bench)" >&2
    status=1
    return
  fi
  echo "# $name: $(basename "$program") $* ($(date -u +%H:%M:%SZ), load $(cut -d' ' -f1 /proc/loadavg))"
  local out rc=0
  out=$(mktemp)
  "$program" "$@" >"$out" || rc=$?
  while IFS= read -r line; do
    if [[ $line == \{* ]]; then
      printf '%s\t%s\n' "$name" "$line" >>"$RESULTS"
      if [ "${BENCH_JSON:-0}" = 1 ]; then printf '%s\n' "$line"; fi
    else
      printf '%s\n' "$line"
    fi
  done <"$out"
  rm -f "$out"
  if [ $rc -ne 0 ]; then
    echo "run-bench: $name failed (exit $rc)" >&2
    printf '%s\t{"failed": true, "exit": %d}\n' "$name" "$rc" >>"$RESULTS"
    status=1
  fi
}

B="$BUILD/bench"
bench apiserver "$B/apiserver_bench" --strait "$STRAIT" --json "${extra[@]}"
bench apiserver-durable "$B/apiserver_bench" --strait "$STRAIT" --durable --json "${extra[@]}"
bench peering "$B/peering_bench" --strait "$STRAIT" --json
bench scheduler "$B/scheduler_bench" --strait "$STRAIT" --json
# The tunnel benchmark needs root for its network namespaces.
if [ "$(id -u)" -eq 0 ] && command -v wireguard-go >/dev/null && command -v iperf3 >/dev/null; then
  bench tunnel "$HERE/../bench/tunnel_bench.sh" "$STRAIT" "${TUNNEL_BENCH_SECONDS:-5}"
else
  echo "# tunnel bench skipped: needs root, wireguard-go and iperf3 (scripts/install-deps.sh)"
fi
bench informer "$B/informer_bench" --strait "$STRAIT" --json
# 50,000 Pods on one virtual node need 50 provider nodes of 1,000 Pods each.
bench offload "$B/offload_bench" --strait "$STRAIT" --json --waves 1000 10000 39000 \
  --provider-nodes 55
bench offload-150 "$B/offload_bench" --strait "$STRAIT" --json --waves 1000 --rate 150
bench metrics "$B/metrics_bench" --strait "$STRAIT" --json
compare=(--compare --json)
if [ "${OFFLOAD_COMPARE_10K:-1}" = 1 ]; then compare+=(--with-10k); fi
bench compare "$B/offload_bench" --strait "$STRAIT" "${compare[@]}"
bench scale "$B/scale_bench" --strait "$STRAIT" --json
bench service "$B/service_bench" --strait "$STRAIT" -o json
bench failover "$B/failover_bench" --strait "$STRAIT" -o json
bench failover-10s "$B/failover_bench" --strait "$STRAIT" --stream-grace 10s \
  --toleration-seconds "${FAILOVER_TOLERATION_SECONDS:-10}" -o json
bench override "$B/failover_bench" --strait "$STRAIT" --mode override --pods 200 -o json
printf 'run\t{"ended": "%s", "load_average_end": "%s"}\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 "$HERE/bench-summary.py" "$RESULTS" || status=1
exit $status
