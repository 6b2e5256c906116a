#!/usr/bin/env bash
# Builds the OCI image of the agent from a built `strait` binary, pulling nothing: the image
# holds the binary at /usr/local/bin/strait, the shared libraries it loads (as ldd lists them,
# the dynamic loader included), the system CA bundle, /etc/passwd and /etc/group naming the
# non-root user it runs as (65532, "nonroot"), and a /tmp. Entrypoint: strait.
# Assembled with umoci (Debian package umoci) into an OCI image layout directory, and packed
# into an oci-archive tarball beside it that `podman load`, `skopeo copy` or any registry
# client takes.
#
#   scripts/build-image.sh [--binary PATH] [--out DIR] [--name NAME] [--tag TAG]
#     --binary  the strait binary (default: build/strait)
#     --out     where to write (default: build/image): DIR/oci is the layout,
#               DIR/strait-image.tar the archive
#     --name    image name (default: strait, the chart's image.repository)
#     --tag     image tag (default: the chart's appVersion)
#
# Prints the image reference on its last line, e.g. "image: oci:build/image/oci:0.1.0".
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BINARY=$ROOT/build/strait
OUT=$ROOT/build/image
NAME=strait
TAG=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}[[:space:]]*$/\1/p' \
  "$ROOT/charts/strait/Chart.yaml")
USER_ID=65532

while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY=${2:?--binary needs a path}; shift 2 ;;
    --out) OUT=${2:?--out needs a directory}; shift 2 ;;
    --name) NAME=${2:?--name needs a name}; shift 2 ;;
    --tag) TAG=${2:?--tag needs a tag}; shift 2 ;;
    *) echo "build-image: unknown argument: $1" \
            "(usage: $0 [--binary PATH] [--out DIR] [--name NAME] [--tag TAG])" >&2
       exit 2 ;;
  esac
done

if [ -z "$TAG" ]; then
  echo "build-image: no --tag and no appVersion in charts/strait/Chart.yaml" >&2
  exit 2
fi
if [ ! -x "$BINARY" ]; then
  echo "build-image: $BINARY is not an executable (build it first: make build)" >&2
  exit 1
fi
if ! command -v umoci >/dev/null; then
  echo "build-image: umoci not found (scripts/install-deps.sh --image installs it)" >&2
  exit 1
fi

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
layout=$OUT/oci
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The root filesystem, laid out in $work/rootfs and added as the image's one layer.
rootfs=$work/rootfs
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
# Without its debug sections (the build's -g1): a third of the size, same code.
objcopy --strip-debug "$BINARY" "$rootfs/usr/local/bin/strait"
chmod 0755 "$rootfs/usr/local/bin/strait"

# Every shared object ldd resolves, at the path it resolved it to, and the dynamic loader.
# A library ldd cannot find fails the build here, not at the first start of the container.
ldd_out=$(ldd "$BINARY")
if grep -q 'not found' <<<"$ldd_out"; then
  echo "build-image: $BINARY needs libraries this machine lacks:" >&2
  grep 'not found' <<<"$ldd_out" >&2
  exit 1
fi
libs=$(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$ldd_out" | sort -u)
nlibs=0
for lib in $libs; do
  # Copy the file itself under the name the binary asks for (symlinks resolved), and keep
  # the path ldd found it at: the loader of the image searches the same default paths.
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
  nlibs=$((nlibs + 1))
done
# Debian's /lib and /lib64 are symlinks into /usr: the loader's path /lib64/ld-linux-... and
# the libraries under /lib/x86_64-linux-gnu resolve in the image as they do here.
for d in lib lib64 lib32 libx32; do
  if [ -L "/$d" ] && [ -d "$rootfs/$d" ] && [ ! -L "$rootfs/$d" ]; then
    target=$(readlink "/$d")
    mkdir -p "$rootfs/$target"
    cp -a "$rootfs/$d/." "$rootfs/$target/"
    rm -rf "${rootfs:?}/$d"
    ln -s "$target" "$rootfs/$d"
  fi
done

if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
fi
cat > "$rootfs/etc/passwd" <<EOF
root:x:0:0:root:/root:/sbin/nologin
nonroot:x:$USER_ID:$USER_ID:nonroot:/home/nonroot:/sbin/nologin
EOF
cat > "$rootfs/etc/group" <<EOF
root:x:0:
nonroot:x:$USER_ID:
EOF
mkdir -p "$rootfs/home/nonroot"
chown "$USER_ID:$USER_ID" "$rootfs/home/nonroot"
echo "hosts: files dns" > "$rootfs/etc/nsswitch.conf"

# umoci: a new empty image in a fresh layout, its rootfs replaced by ours, then the config.
rm -rf "$layout"
umoci init --layout "$layout"
umoci new --image "$layout:$TAG"
umoci unpack --image "$layout:$TAG" "$work/bundle" >/dev/null
rm -rf "$work/bundle/rootfs"
mv "$rootfs" "$work/bundle/rootfs"
umoci repack --image "$layout:$TAG" "$work/bundle"
created=$(date -u -d "@$(stat -c %Y "$BINARY")" +%Y-%m-%dT%H:%M:%SZ)
umoci config --image "$layout:$TAG" \
  --author "Strait" \
  --created "$created" \
  --os linux --architecture amd64 \
  --config.user "$USER_ID:$USER_ID" \
  --config.workingdir /home/nonroot \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.env HOME=/home/nonroot \
  --config.entrypoint /usr/local/bin/strait \
  --clear config.cmd \
  --config.label "org.opencontainers.image.title=$NAME" \
  --config.label "org.opencontainers.image.version=$TAG" \
  --history.comment "strait binary and its $nlibs shared libraries" \
  --history.created_by "scripts/build-image.sh"
umoci gc --layout "$layout"

# The archive: the layout directory as one tar (the oci-archive transport).
tar -C "$layout" -cf "$OUT/strait-image.tar" .
size=$(du -sm "$layout" | cut -f1)
echo "build-image: $NAME:$TAG with $nlibs shared libraries, $size MB, user $USER_ID," \
     "entrypoint /usr/local/bin/strait"
echo "build-image: archive $OUT/strait-image.tar (podman load -i ..., skopeo copy oci-archive:...)"
echo "image: oci:$layout:$TAG"
