#!/usr/bin/env bash
# Tunnel benchmark: iperf3 through Strait's gateway and through Debian's
# wireguard-go, over the same veth pair between two network namespaces, in one run; one
# and four TCP streams; throughput, the tunnel processes' CPU (both ends, in cores) and CPU
# per Gbit/s, and the Strait / wireguard-go ratio. Also the plain veth as the ceiling.
#
#   sudo bench/tunnel_bench.sh <strait-binary> [seconds per run, default 5]
#
# Needs root, wireguard-go, wireguard-tools (wg), iperf3, python3. Everything it creates
# (namespaces, processes, temp dir) is removed on exit, processes by pid.
set -euo pipefail
umask 077

STRAIT=${1:?usage: tunnel_bench.sh <strait-binary> [seconds]}
SECS=${2:-5}
[ "$(id -u)" -eq 0 ] || { echo "tunnel_bench: needs root" >&2; exit 1; }
for t in wireguard-go wg iperf3 python3 ip; do
  command -v "$t" >/dev/null || { echo "tunnel_bench: $t missing (scripts/install-deps.sh)" >&2; exit 1; }
done

TAG=tb$$
A=${TAG}A
B=${TAG}B
DIR=$(mktemp -d /tmp/strait-tunnel-bench.XXXXXX)
PIDS=()

cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT

ip netns add "$A"
ip netns add "$B"
ip link add "${TAG}va" type veth peer name "${TAG}vb"
ip link set "${TAG}va" netns "$A"
ip link set "${TAG}vb" netns "$B"
ip -n "$A" addr add 10.99.0.1/24 dev "${TAG}va"
ip -n "$B" addr add 10.99.0.2/24 dev "${TAG}vb"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "${TAG}va" up
ip -n "$B" link set "${TAG}vb" up

wg genkey > "$DIR/a.key"; wg pubkey < "$DIR/a.key" > "$DIR/a.pub"
wg genkey > "$DIR/b.key"; wg pubkey < "$DIR/b.key" > "$DIR/b.pub"

cpu_ticks() {  # utime+stime of the given pids, in clock ticks
  local total=0
  for p in "$@"; do
    local f
    f=$(sed 's/^.*) //' "/proc/$p/stat")
    total=$((total + $(echo "$f" | awk '{print $12 + $13}')))
  done
  echo "$total"
}

wait_ping() {
  for _ in $(seq 1 50); do
    ip netns exec "$A" ping -c 1 -W 1 "$1" >/dev/null 2>&1 && return 0
  done
  echo "tunnel_bench: no ping through $2" >&2
  return 1
}

# run_iperf LABEL STREAMS DEST PIDS... -> prints one result line, records gbps in RESULT
run_iperf() {
  local label=$1 streams=$2 dest=$3
  shift 3
  ip netns exec "$B" iperf3 -s -1 >/dev/null 2>&1 &
  local server=$!
  PIDS+=("$server")
  for _ in $(seq 1 50); do
    ip netns exec "$B" ss -ltn | grep -q ':5201 ' && break
    sleep 0.1
  done
  local t0 c0
  t0=$(date +%s.%N)
  c0=$(cpu_ticks "$@")
  ip netns exec "$A" iperf3 -c "$dest" -t "$SECS" -P "$streams" -J > "$DIR/iperf.json"
  local c1 t1
  c1=$(cpu_ticks "$@")
  t1=$(date +%s.%N)
  wait "$server" 2>/dev/null || true
  python3 - "$DIR/iperf.json" "$label" "$streams" "$c0" "$c1" "$t0" "$t1" "$(getconf CLK_TCK)" "$#" <<'PY'
import json, sys
path, label, streams, c0, c1, t0, t1, hz, nproc = sys.argv[1:]
end = json.load(open(path))["end"]
gbps = end["sum_received"]["bits_per_second"] / 1e9
retr = end.get("sum_sent", {}).get("retransmits", 0)
wall = float(t1) - float(t0)
cores = (int(c1) - int(c0)) / int(hz) / wall if int(nproc) > 0 else 0.0
per = f"{cores / gbps:.2f}" if int(nproc) > 0 and gbps > 0 else "-"
cpu = f"{cores:.2f}" if int(nproc) > 0 else "-"
print(f"| {label:<13} | {streams:>7} | {gbps:>7.2f} | {retr:>11} | {cpu:>15} | {per:>18} |")
open(path + ".gbps", "w").write(f"{gbps}")
PY
  RESULT=$(cat "$DIR/iperf.json.gbps")
}

echo "# tunnel bench $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg), ${SECS}s per run"
echo "| path          | streams |  Gbit/s | retransmits | tunnel CPU (cores) | CPU per Gbit/s |"
echo "|---------------|---------|---------|-------------|-----------------|--------------------|"

declare -A GBPS
for streams in 1 4; do
  run_iperf "plain veth" "$streams" 10.99.0.2
  GBPS[veth$streams]=$RESULT
done

# --- wireguard-go on both ends ---
WG_PROCESS_FOREGROUND=1 ip netns exec "$A" wireguard-go "${TAG}wa" >/dev/null 2>&1 &
WGA=$!
PIDS+=("$WGA")
WG_PROCESS_FOREGROUND=1 ip netns exec "$B" wireguard-go "${TAG}wb" >/dev/null 2>&1 &
WGB=$!
PIDS+=("$WGB")
for i in $(seq 1 50); do
  [ -S "/var/run/wireguard/${TAG}wa.sock" ] && [ -S "/var/run/wireguard/${TAG}wb.sock" ] && break
  sleep 0.1
done
ip netns exec "$A" wg set "${TAG}wa" private-key "$DIR/a.key" listen-port 51820 \
  peer "$(cat "$DIR/b.pub")" endpoint 10.99.0.2:51820 allowed-ips 10.100.0.2/32
ip netns exec "$B" wg set "${TAG}wb" private-key "$DIR/b.key" listen-port 51820 \
  peer "$(cat "$DIR/a.pub")" endpoint 10.99.0.1:51820 allowed-ips 10.100.0.1/32
ip -n "$A" addr add 10.100.0.1/24 dev "${TAG}wa"; ip -n "$A" link set "${TAG}wa" up
ip -n "$B" addr add 10.100.0.2/24 dev "${TAG}wb"; ip -n "$B" link set "${TAG}wb" up
wait_ping 10.100.0.2 wireguard-go
for streams in 1 4; do
  run_iperf "wireguard-go" "$streams" 10.100.0.2 "$WGA" "$WGB"
  GBPS[wg$streams]=$RESULT
done
kill "$WGA" "$WGB"; wait "$WGA" "$WGB" 2>/dev/null || true

# --- Strait on both ends ---
conf() {  # conf KEYFILE ADDRESS PEERPUB ENDPOINT ALLOWED
  printf '[Interface]\nPrivateKey = %s\nListenPort = 51820\nAddress = %s\n\n[Peer]\nPublicKey = %s\nEndpoint = %s\nAllowedIPs = %s\n' \
    "$(cat "$1")" "$2" "$3" "$4" "$5"
}
conf "$DIR/a.key" 10.100.1.1/24 "$(cat "$DIR/b.pub")" 10.99.0.2:51820 10.100.1.2/32 > "$DIR/a.conf"
conf "$DIR/b.key" 10.100.1.2/24 "$(cat "$DIR/a.pub")" 10.99.0.1:51820 10.100.1.1/32 > "$DIR/b.conf"
ip netns exec "$A" "$STRAIT" gateway --config "$DIR/a.conf" --interface "${TAG}sa" --log-level warn &
SA=$!
PIDS+=("$SA")
ip netns exec "$B" "$STRAIT" gateway --config "$DIR/b.conf" --interface "${TAG}sb" --log-level warn &
SB=$!
PIDS+=("$SB")
wait_ping 10.100.1.2 strait
for streams in 1 4; do
  run_iperf "strait" "$streams" 10.100.1.2 "$SA" "$SB"
  GBPS[strait$streams]=$RESULT
done

for streams in 1 4; do
  python3 -c "import sys; s,w=float(sys.argv[1]),float(sys.argv[2]); print(f'strait / wireguard-go, {sys.argv[3]} stream(s): {s/w:.2f}x' if w>0 else 'n/a')" \
    "${GBPS[strait$streams]}" "${GBPS[wg$streams]}" "$streams"
done
# One JSON line for scripts (scripts/run-bench.sh collects it).
printf '{"veth_gbps_1": %s, "wireguard_go_gbps_1": %s, "strait_gbps_1": %s, "veth_gbps_4": %s, "wireguard_go_gbps_4": %s, "strait_gbps_4": %s, "load_average_1m_end": %s}\n' \
  "${GBPS[veth1]}" "${GBPS[wg1]}" "${GBPS[strait1]}" "${GBPS[veth4]}" "${GBPS[wg4]}" "${GBPS[strait4]}" \
  "$(cut -d' ' -f1 /proc/loadavg)"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
