#!/usr/bin/env bash
# Installs the Debian packages Strait's build and tests need. Idempotent: installs only
# what is missing, so a second run does nothing and needs no network.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libcpprest-dev libboost-dev libboost-system-dev
  nlohmann-json3-dev libyaml-cpp-dev libssl-dev libspdlog-dev libfmt-dev libcli11-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3 python3-kubernetes python3-yaml
  curl openssl iproute2 procps
  wireguard-go wireguard-tools iperf3 iputils-ping socat
  nftables dnsmasq-base
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
