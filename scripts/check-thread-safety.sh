#!/usr/bin/env bash
# Clang's thread-safety analysis over the product sources that use base/thread_annotations.h
# (the .cpp or its own header; not tests, benchmarks or fuzzers): each such translation unit
# of the build's compile_commands.json is parsed by clang++ with -Wthread-safety
# -Werror=thread-safety (syntax only: nothing is generated), so a field declared
# GUARDED_BY(mu_) read or written without mu_ held fails `make test`. Sources without
# annotations are skipped: the analysis has nothing to check there, and parsing every file
# with clang would take minutes. In a unity build (make's STRAIT_UNITY) the translation units
# are the batches: a batch is checked when it includes a source to check.
# Usage: scripts/check-thread-safety.sh [BUILD_DIR [PATH_REGEX]]
set -euo pipefail
build=${1:-build}
only=${2:-}
top=$(cd "$(dirname "$0")/.." && pwd)
db="$build/compile_commands.json"
if [ ! -f "$db" ]; then
  echo "check-thread-safety: $db not found (configure the build first)" >&2
  exit 2
fi
clangxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$clangxx" ]; then
  echo "check-thread-safety: clang++ not found (scripts/install-deps.sh installs clang)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One shell command per product source: the compiler swapped for clang++, GCC's precompiled
# header (which clang cannot read) replaced by a copy of the header it was made from.
python3 - "$db" "$top" "$clangxx" "$work" "$only" > "$work/commands" <<'PY'
import json, shlex, sys, os
import re
db, top, clangxx, work, only = sys.argv[1:6]
dirs = ("kube/", "minicluster/", "peering/", "reflection/", "vnode/", "tunnel/", "cmd/", "base/")
seen = set()
def annotated(path):
    try:
        t = open(os.path.join(top, path)).read()
    except OSError:
        return False
    return "base/thread_annotations.h" in t or "GUARDED_BY(" in t
def wanted(f):
    return (f.startswith(dirs) and f.endswith(".cpp") and re.search(only, f)
            and (annotated(f) or annotated(f[:-4] + ".h")))
for e in json.load(open(db)):
    path = os.path.join(e["directory"], e["file"])
    if re.search(r"/Unity/unity_[^/]*\.cxx$", path):
        # A unity batch (make's STRAIT_UNITY build): checked whole when one of the sources
        # it includes is one to check.
        try:
            inc = re.findall(r'^#include "([^"]+)"', open(path).read(), re.M)
        except OSError:
            continue
        members = [os.path.relpath(i, top) for i in inc]
        if not any(wanted(m) and m not in seen for m in members):
            continue
        seen.update(members)
    else:
        f = os.path.relpath(e["file"], top)
        if f in seen or not wanted(f):
            continue
        seen.add(f)
    args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    # Drop a launcher (cmake -E env ... ccache) and the compiler itself.
    while args and not args[0].endswith(("g++", "c++", "clang++")):
        args.pop(0)
    out, skip = [clangxx], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-Winvalid-pch") or a.startswith("-fpch"):
            continue
        if a.endswith("cmake_pch.hxx") and out[-1] == "-include":
            # A copy away from GCC's .gch, which clang would try and reject.
            copy = os.path.join(work, a.replace("/", "_"))
            if not os.path.exists(copy):
                open(copy, "w").write(open(a).read())
            a = copy
        out.append(a)
    out += ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]
    print("cd " + shlex.quote(e["directory"]) + " && " + " ".join(shlex.quote(a) for a in out))
PY
n=$(wc -l < "$work/commands")
echo "check-thread-safety: $n translation units, clang $("$clangxx" --version | head -1 | sed 's/.*version //')"
jobs=${JOBS:-$(nproc)}
fail=0
tr '\n' '\0' < "$work/commands" | xargs -0 -P "$jobs" -I{} bash -c '{}' > "$work/out" 2>&1 || fail=1
if [ "$fail" -ne 0 ]; then
  grep -E 'error|warning' "$work/out" | head -60 >&2
  echo "check-thread-safety: FAILED" >&2
  exit 1
fi
echo "check-thread-safety: ok"
