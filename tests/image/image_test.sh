#!/usr/bin/env bash
# The agent's OCI image (scripts/build-image.sh) from the built binary: its configuration
# (user 65532, entrypoint /usr/local/bin/strait, the name and tag the chart's defaults give),
# then `strait version` run in it by podman with no network, against the binary's own output.
#
# Usage: image_test.sh STRAIT_BINARY
# Exit 0 when every check passes, 1 on a failure (each printed with what was expected), 77
# (skipped, with the reason) when umoci or podman is missing or podman cannot start a container
# on this host.
set -euo pipefail

STRAIT=${1:?usage: $0 STRAIT_BINARY}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

skip() { echo "image_test: SKIPPED: $*"; exit 77; }
fail() { echo "image_test: FAILED: $*" >&2; exit 1; }

command -v umoci >/dev/null || skip "umoci not installed (scripts/install-deps.sh --image installs it)"
command -v podman >/dev/null || skip "podman not installed (apt-get install podman runc to run the image here)"

# Lower case only: podman names an image pulled from an OCI layout after the layout's path.
work=/tmp/strait-image-test-$$-$RANDOM
mkdir -m 700 "$work"
cleanup() {
  # podman's per-test storage holds overlay or vfs layers owned by root: remove through podman.
  podman --root "$work/storage" --runroot "$work/run" --storage-driver vfs \
    rmi -a -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$ROOT/scripts/build-image.sh" --binary "$STRAIT" --out "$work/image" > "$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "scripts/build-image.sh failed"; }
ref=$(sed -n 's/^image: //p' "$work/build.log")
[ -n "$ref" ] || fail "scripts/build-image.sh printed no 'image:' line"
tag=${ref##*:}

# The chart's defaults name this image: repository strait, tag = appVersion.
chart_repo=$(sed -n '/^image:/,/^[^ ]/s/^  repository:[[:space:]]*//p' "$ROOT/charts/strait/values.yaml")
chart_app=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}[[:space:]]*$/\1/p' \
  "$ROOT/charts/strait/Chart.yaml")
[ "$chart_repo" = strait ] || fail "charts/strait/values.yaml image.repository is '$chart_repo', the image is named strait"
[ "$tag" = "$chart_app" ] || fail "image tag '$tag' is not the chart's appVersion '$chart_app'"

# The OCI configuration, read from the layout as any runtime reads it.
python3 - "$work/image/oci" "$tag" <<'PY' || fail "image configuration (above)"
import json, os, sys
layout, tag = sys.argv[1:3]
def blob(digest):
    algo, hexd = digest.split(":")
    return json.load(open(os.path.join(layout, "blobs", algo, hexd)))
index = json.load(open(os.path.join(layout, "index.json")))
refs = [m for m in index["manifests"]
        if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
if len(refs) != 1:
    sys.exit(f"index.json: want one manifest tagged {tag}, got {len(refs)}")
manifest = blob(refs[0]["digest"])
config = blob(manifest["config"]["digest"])
c = config.get("config", {})
want = {"User": "65532:65532", "Entrypoint": ["/usr/local/bin/strait"]}
bad = [f"{k}: want {v!r}, got {c.get(k)!r}" for k, v in want.items() if c.get(k) != v]
if config.get("os") != "linux" or config.get("architecture") != "amd64":
    bad.append(f"platform: want linux/amd64, got {config.get('os')}/{config.get('architecture')}")
if len(manifest.get("layers", [])) != 1:
    bad.append(f"layers: want 1, got {len(manifest.get('layers', []))}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print("image_test: config ok: user 65532:65532, entrypoint /usr/local/bin/strait, linux/amd64, one layer")
PY

# podman, with its own storage under $work (nothing of the host's podman state is touched).
# On this kind of host the defaults fail before the container starts: crun refuses cgroups
# v1 with a cgroup2 hierarchy that has controllers ("hybrid mode"), and raising RLIMIT_NOFILE
# and RLIMIT_NPROC to podman's defaults needs CAP_SYS_RESOURCE. runc (when installed) and
# limits no higher than this process's own avoid both.
opts=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
run_opts=(--rm --network none --ulimit "nofile=$(ulimit -Sn):$(ulimit -Sn)" --ulimit nproc=4096:4096)
if command -v runc >/dev/null; then opts+=(--runtime runc); fi
want=$("$STRAIT" version)
rc=0
got=$(podman "${opts[@]}" run "${run_opts[@]}" "oci:$work/image/oci:$tag" version 2> "$work/podman.err") || rc=$?
if [ "$rc" -ne 0 ]; then
  err=$(grep -v '^Getting image\|^Copying\|^Writing manifest\|^Storing signatures' "$work/podman.err" || true)
  if grep -qiE 'cgroup|rlimit|permission denied|operation not permitted' <<<"$err" &&
     ! grep -q '/usr/local/bin/strait' <<<"$err"; then
    skip "podman cannot start a container on this host: $err"
  fi
  fail "podman run exited $rc: $err"
fi
[ "$got" = "$want" ] || fail "strait version in the image printed '$got', the binary prints '$want'"
user=$(podman "${opts[@]}" image inspect --format '{{.Config.User}}' "oci:$work/image/oci:$tag" 2>/dev/null ||
       podman "${opts[@]}" image inspect --format '{{.Config.User}}' "$(podman "${opts[@]}" images -q | head -1)")
[ "$user" = "65532:65532" ] || fail "podman sees the image's user as '$user', want 65532:65532"
echo "image_test: podman ran '$got' in the image (network none, user $user)"
echo "image_test: ok"
