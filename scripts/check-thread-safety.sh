#!/usr/bin/env bash
# Clang's thread-safety analysis over the product sources that use base/thread_annotations.h
# (the .cpp or its own header; not tests, benchmarks or fuzzers): each such source is parsed
# by clang++ with -Wthread-safety -Werror=thread-safety (syntax only: nothing is generated),
# with the flags its target compiles it with in the build's compile_commands.json, so a field
# declared GUARDED_BY(mu_) read or written without mu_ held fails `make test`.
#
# What it costs and how it is kept small: parsing a source is mostly parsing the library
# headers it includes (Boost, cpprestsdk, nlohmann/json, spdlog, gRPC) and instantiating their
# templates, a few CPU-seconds each. So the sources are grouped by their compile flags (the
# sources of a target, or of targets compiled alike) and each group's library headers (the
# <...> includes of its sources and of the project headers they include) are parsed once into
# a clang precompiled header that every source of the group then loads. The project's own
# headers are never precompiled: their inline functions are analysed in every source, as in a
# plain compile. Sources without annotations are skipped (the analysis has nothing to check
# there); in a unity build (make's STRAIT_UNITY) each annotated source of a batch is parsed on
# its own with the batch's flags, not the whole batch. If a group's precompiled header cannot
# be built, its sources are parsed without one (slower, same result) and the reason is printed.
#
# With ccache (as the build uses it), each source is parsed through ccache instead, without
# the precompiled headers: a source whose text, included headers and flags are unchanged since
# a clean parse (in any checkout: paths are taken relative to the checkout, as in the build) is
# not parsed again. A failed parse is never cached. STRAIT_TSA_CCACHE=0 parses everything.
#
# Usage: scripts/check-thread-safety.sh [BUILD_DIR [PATH_REGEX]]
#   PATH_REGEX  only sources whose path (from the checkout's top) matches, e.g. '^peering/';
#               no annotated source matching it is an error (exit 2)
#   JOBS        clang processes at once (default nproc)
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
ccache=""
if [ "${STRAIT_TSA_CCACHE:-1}" != 0 ]; then
  ccache=$(command -v ccache || true)
fi
# Copies of the build's precompiled-header sources live at a fixed place of the build dir, so
# that the flags naming them (and ccache's key) are the same from run to run.
keep="$build/thread-safety"
mkdir -p "$keep"
rc=0
python3 - "$db" "$top" "$clangxx" "$work" "$only" "${JOBS:-$(nproc)}" "$ccache" \
  "$(cd "$keep" && pwd)" <<'PY' || rc=$?
import json, os, re, shlex, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

db, top, clangxx, work, only, jobs, ccache, keep = sys.argv[1:9]
jobs = max(1, int(jobs))
dirs = ("kube/", "minicluster/", "peering/", "reflection/", "vnode/", "tunnel/", "cmd/", "base/")
include_re = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)
checks = ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def annotated(rel):
    t = read(os.path.join(top, rel))
    return t is not None and ("base/thread_annotations.h" in t or "GUARDED_BY(" in t)


def wanted(rel):
    return (rel.startswith(dirs) and rel.endswith(".cpp") and re.search(only, rel)
            and (annotated(rel) or annotated(rel[:-4] + ".h")))


def flags_of(entry, source):
    """The entry's compiler arguments without the compiler, the source and the outputs."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    while args and not args[0].endswith(("g++", "c++", "clang++")):
        args.pop(0)
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-Winvalid-pch") or a.startswith("-fpch"):
            continue
        if os.path.normpath(os.path.join(entry["directory"], a)) == source:
            continue
        if a.endswith("cmake_pch.hxx") and out and out[-1] == "-include":
            # GCC's precompiled header is its .gch, which clang would try and reject: the
            # header it was made from is read instead, from a copy that has no .gch beside it.
            copy = os.path.join(keep, os.path.relpath(a, top).replace("/", "_"))
            text = read(os.path.join(entry["directory"], a)) or ""
            if read(copy) != text:
                with open(copy, "w") as f:
                    f.write(text)
            a = copy
        out.append(a)
    return out


# The sources to check, each with its target's flags.
units, seen = [], set()
for e in json.load(open(db)):
    path = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if re.search(r"/Unity/unity_[^/]*\.cxx$", path):
        members = [os.path.relpath(i, top) for i in
                   re.findall(r'^#include "([^"]+)"', read(path) or "", re.M)]
    else:
        members = [os.path.relpath(path, top)]
    for rel in members:
        if rel in seen or not wanted(rel):
            continue
        seen.add(rel)
        units.append((rel, e["directory"], flags_of(e, path)))

# The library headers a source reaches: its <...> includes and those of the project headers
# it includes, transitively.
header_cache = {}


def library_includes(path, include_dirs, visited):
    if path in visited:
        return []
    visited.add(path)
    text = read(path)
    if text is None:
        return []
    found = []
    for kind, name in include_re.findall(text):
        local = None
        for d in ([os.path.dirname(path)] if kind == '"' else []) + include_dirs:
            candidate = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(candidate):
                local = candidate
                break
        if local is not None:
            found += library_includes(local, include_dirs, visited)
        elif kind == "<":
            found.append(name)
    return found


if not units:
    # A check that parses nothing proves nothing: a stale PATH_REGEX or a build without the
    # product sources.
    print(f"check-thread-safety: no annotated source{' matches ' + only if only else ''} "
          f"in {db}", file=sys.stderr)
    sys.exit(2)

groups = {}
for rel, directory, flags in units:
    groups.setdefault((directory, tuple(flags)), []).append(rel)

summary = []


def build_pch(index, key):
    directory, flags = key
    include_dirs = [os.path.normpath(os.path.join(directory, f[2:])) for f in flags
                    if f.startswith("-I") and len(f) > 2]
    headers, visited = [], set()
    for rel in groups[key]:
        for h in library_includes(os.path.join(top, rel), include_dirs, visited):
            if h not in headers:
                headers.append(h)
    prefix = os.path.join(work, f"group{index}.h")
    pch = prefix + ".pch"
    with open(prefix, "w") as f:
        f.write("".join(f"#include <{h}>\n" for h in headers))
    cmd = [clangxx, *flags, "-x", "c++-header", prefix, "-o", pch,
           "-fpch-instantiate-templates", "-Wno-everything"]
    r = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
    if r.returncode != 0:
        first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip())
        print(f"check-thread-safety: no precompiled header for {groups[key][0]} and its "
              f"group ({first}); they are parsed whole", flush=True)
        return None
    return pch


started = time.monotonic()
if ccache:
    pchs = {key: None for key in groups}
else:
    with ThreadPoolExecutor(jobs) as pool:
        pchs = dict(zip(groups, pool.map(lambda ik: build_pch(*ik), enumerate(groups))))
pch_seconds = time.monotonic() - started
env = dict(os.environ, CCACHE_BASEDIR=top, CCACHE_NOHASHDIR="1")


def check(unit):
    rel, directory, flags = unit
    pch = pchs[(directory, tuple(flags))]
    cmd = [*([ccache] if ccache else []), clangxx, *flags,
           *(["-include-pch", pch] if pch else []), os.path.join(top, rel), *checks]
    r = subprocess.run(cmd, cwd=directory, capture_output=True, text=True, env=env)
    return rel, r.returncode, r.stdout + r.stderr


version = subprocess.run([clangxx, "--version"], capture_output=True, text=True).stdout
version = re.sub(r".*version ", "", version.splitlines()[0]) if version else "?"
how = "through ccache" if ccache else f"precompiled headers {pch_seconds:.1f} s"
print(f"check-thread-safety: {len(units)} sources in {len(groups)} groups, clang {version}, "
      f"{jobs} at once; {how}", flush=True)
failed, reported = [], set()
with ThreadPoolExecutor(jobs) as pool:
    for rel, code, output in pool.map(check, units):
        if code != 0:
            failed.append(rel)
            # An error in a header shows in every source that includes it: said once.
            lines = [l for l in output.splitlines() if "error" in l or "warning" in l]
            for line in lines[:30] or output.splitlines()[:30]:
                if line not in reported:
                    reported.add(line)
                    print(line, file=sys.stderr)
print(f"check-thread-safety: {len(units)} sources parsed in "
      f"{time.monotonic() - started:.1f} s", flush=True)
if failed:
    print("check-thread-safety: FAILED in " + " ".join(failed), file=sys.stderr)
    sys.exit(1)
print("check-thread-safety: ok")
PY
exit "$rc"
