#!/usr/bin/env bash
# Runs the benchmarks built in <build-dir> and prints their figures (`make bench`).
# Builds nothing: `make bench` builds first.
#
#   ./scripts/run-bench.sh <build-dir> [extra apiserver_bench flags, e.g. --pods 2000]
#
# The API-server benchmark runs twice: in-memory (the default minicluster) and --durable
# (data dir with an fsync'd write-ahead log). Set BENCH_JSON=1 for JSON lines instead of
# tables. Exits non-zero if a run failed (write errors, incomplete watchers, no server).
set -euo pipefail

BUILD=${1:?usage: run-bench.sh <build-dir> [apiserver_bench flags]}
shift
BENCH="$BUILD/bench/apiserver_bench"
STRAIT="$BUILD/strait"
for f in "$BENCH" "$STRAIT"; do
  if [ ! -x "$f" ]; then
    echo "run-bench: $f not built (run: make bench)" >&2
    exit 1
  fi
done

extra=("$@")
if [ "${BENCH_JSON:-0}" = 1 ]; then
  extra+=(--json)
fi

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
"$BENCH" --strait "$STRAIT" "${extra[@]}" || status=1
"$BENCH" --strait "$STRAIT" --durable "${extra[@]}" || status=1
if [ -x "$BUILD/bench/peering_bench" ]; then
  peering_extra=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then peering_extra+=(--json); fi
  "$BUILD/bench/peering_bench" --strait "$STRAIT" "${peering_extra[@]}" || status=1
fi
# Scheduler + simulated kubelets: 1,000 nodes, 30,000 pods.
SCHED="$BUILD/bench/scheduler_bench"
if [ -x "$SCHED" ]; then
  sched_flags=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then sched_flags+=(--json); fi
  "$SCHED" --strait "$STRAIT" "${sched_flags[@]}" || status=1
else
  echo "run-bench: $SCHED not built, skipped" >&2
fi
# The tunnel benchmark needs root for its network namespaces.
if [ "$(id -u)" -eq 0 ] && command -v wireguard-go >/dev/null && command -v iperf3 >/dev/null; then
  "$(dirname "$0")/../bench/tunnel_bench.sh" "$STRAIT" "${TUNNEL_BENCH_SECONDS:-5}" || status=1
else
  echo "# tunnel bench skipped: needs root, wireguard-go and iperf3 (scripts/install-deps.sh)"
fi
# Informer benchmark: its own flags; BENCH_JSON=1 gives one JSON line.
INFORMER_BENCH="$BUILD/bench/informer_bench"
if [ -x "$INFORMER_BENCH" ]; then
  ijson=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then
    ijson=(--json)
  fi
  "$INFORMER_BENCH" --strait "$STRAIT" "${ijson[@]}" || status=1
else
  echo "run-bench: $INFORMER_BENCH not built (run: make bench)" >&2
  status=1
fi
# Offload benchmark: 1,000 then 10,000 Pods to one virtual node.
OFFLOAD_BENCH="$BUILD/bench/offload_bench"
if [ -x "$OFFLOAD_BENCH" ]; then
  ojson=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then ojson=(--json); fi
  "$OFFLOAD_BENCH" --strait "$STRAIT" "${ojson[@]}" || status=1
else
  echo "run-bench: $OFFLOAD_BENCH not built (run: make bench)" >&2
  status=1
fi
# Metrics benchmark: one agent /metrics scrape after 10,000 offloaded Pods.
METRICS_BENCH="$BUILD/bench/metrics_bench"
if [ -x "$METRICS_BENCH" ]; then
  mjson=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then mjson=(--json); fi
  "$METRICS_BENCH" --strait "$STRAIT" "${mjson[@]}" || status=1
else
  echo "run-bench: $METRICS_BENCH not built (run: make bench)" >&2
  status=1
fi
# Offloaded vs direct: a Deployment of 1,000 then 3,000 replicas to all Ready, offloaded to a
# virtual node vs created directly in an identical provider cluster (OFFLOAD_COMPARE_10K=1
# adds 10,000).
if [ -x "$OFFLOAD_BENCH" ]; then
  cflags=(--compare)
  if [ "${BENCH_JSON:-0}" = 1 ]; then cflags+=(--json); fi
  if [ "${OFFLOAD_COMPARE_10K:-0}" = 1 ]; then cflags+=(--with-10k); fi
  "$OFFLOAD_BENCH" --strait "$STRAIT" "${cflags[@]}" || status=1
fi
# Peerings in numbers: one consumer with 20 providers, one provider with 20 consumers.
SCALE_BENCH="$BUILD/bench/scale_bench"
if [ -x "$SCALE_BENCH" ]; then
  sflags=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then sflags+=(--json); fi
  "$SCALE_BENCH" --strait "$STRAIT" "${sflags[@]}" || status=1
else
  echo "run-bench: $SCALE_BENCH not built (run: make bench)" >&2
  status=1
fi
# Service reflection: 1,000 Services with 10 endpoints each, 200 endpoint changes.
SERVICE_BENCH="$BUILD/bench/service_bench"
if [ -x "$SERVICE_BENCH" ]; then
  vflags=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then vflags+=(-o json); fi
  "$SERVICE_BENCH" --strait "$STRAIT" "${vflags[@]}" || status=1
else
  echo "run-bench: $SERVICE_BENCH not built (run: make bench)" >&2
  status=1
fi
# Placement: failover of a Deployment over two providers when one provider agent is killed,
# with the default knobs (stream grace 40 s, tolerationSeconds 300: about six minutes), then
# with a 10 s grace and tolerationSeconds FAILOVER_TOLERATION_SECONDS (10); then the offload
# latency of 200 Pods with an OffloadingOverride against 200 without.
FAILOVER_BENCH="$BUILD/bench/failover_bench"
if [ -x "$FAILOVER_BENCH" ]; then
  pflags=()
  if [ "${BENCH_JSON:-0}" = 1 ]; then pflags+=(-o json); fi
  "$FAILOVER_BENCH" --strait "$STRAIT" "${pflags[@]}" || status=1
  "$FAILOVER_BENCH" --strait "$STRAIT" --stream-grace 10s \
    --toleration-seconds "${FAILOVER_TOLERATION_SECONDS:-10}" "${pflags[@]}" || status=1
  "$FAILOVER_BENCH" --strait "$STRAIT" --mode override --pods 200 "${pflags[@]}" || status=1
else
  echo "run-bench: $FAILOVER_BENCH not built (run: make bench)" >&2
  status=1
fi
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
