#!/usr/bin/env bash
# `make demo` until the two-cluster demo exists: start one minicluster and say how to point
# kubectl at it. Ctrl-C stops it.
set -euo pipefail
bin=${1:-build/strait}
dir=${STRAIT_DEMO_DIR:-/tmp/strait-demo}
mkdir -p "$dir"
rm -f "$dir/kubeconfig"
"$bin" minicluster --name demo --listen 127.0.0.1:0 --kubeconfig-out "$dir/kubeconfig" \
  --data-dir "$dir/data" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null' EXIT INT TERM
for _ in $(seq 100); do
  [ -f "$dir/kubeconfig" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "minicluster failed to start" >&2; exit 1; }
  sleep 0.1
done
cat <<MSG

  The minicluster "demo" is running (pid $pid), state in $dir/data.

  In another terminal:
    export KUBECONFIG=$dir/kubeconfig
    kubectl get namespaces
    kubectl create deployment web --image=nginx:1.27
    kubectl get all -A

  Ctrl-C here stops it.
MSG
wait "$pid"
