#!/usr/bin/env bash
# Checks the lock rules (src/core/mutex.h's annotations) with clang's thread-safety analysis:
# the C++ sources of the build that can hold a finding are parsed by clang++-14 with
# -Wthread-safety as errors (-fsyntax-only: no code generated, the flags of the build's
# compile_commands.json). Those are the sources under src/, python/, bench/, examples/ whose
# includes (ninja's dependency log) reach core/mutex.h, where the annotations are defined; a
# source that never includes it has no annotation to break. Unit tests count only when they
# include one of the fake servers (src/*/fake_*_for_test.h, classes that hold locks). Without a
# dependency log (a build not yet run) every source is checked. First it proves that the check
# can fail: a sample that reads a guarded member without its lock must be refused. Exit code
# non-zero on any finding.
# Usage: scripts/check-thread-safety.sh [BUILD_DIR] (default build/, configured by
# scripts/build.sh); CHECK_JOBS sets the parallelism (default nproc).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${1:-${BUILD_DIR:-$root/build}}"
cxx="${CHECK_CXX:-clang++-14}"
if ! command -v "$cxx" >/dev/null; then
  echo "check-thread-safety.sh: $cxx is missing (run scripts/install-deps.sh)"
  exit 1
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check-thread-safety.sh: $build/compile_commands.json is missing (run scripts/build.sh)"
  exit 1
fi
flags=(-fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror=thread-safety
  -Werror=thread-safety-beta -Wno-unknown-warning-option -Wno-unused-command-line-argument)

# 1. The check must be able to fail.
sample="$root/tests/thread_safety/unguarded_read.cc"
if "$cxx" -std=c++20 -I"$root/src" "${flags[@]}" "$sample" 2>/dev/null; then
  echo "check-thread-safety.sh: $sample compiled: the analysis is not checking anything"
  exit 1
fi

# 2. Every source of the build, with its own flags (GCC-only options dropped).
list="$(mktemp)" deps="$(mktemp)"
trap 'rm -f "$list" "$deps"' EXIT
# Objects whose headers reach core/mutex.h ("M obj") or a fake server ("F obj").
ninja -C "$build" -t deps 2>/dev/null | awk '
  /^[^ ].*: #deps/ { obj = $1; sub(":$", "", obj) }
  /src\/core\/mutex\.h$/ { print "M " obj }
  /src\/[a-z_\/]*fake_[a-z_]*_for_test\.h$/ { print "F " obj }' >"$deps" || true
/usr/bin/python3 - "$build/compile_commands.json" "$root" "$deps" >"$list" <<'EOF'
import json, os, shlex, sys
root = sys.argv[2]
marks = {}
for line in open(sys.argv[3]):
    kind, obj = line.split(maxsplit=1)
    marks.setdefault(obj.strip(), set()).add(kind)
keep_dirs = ("src/", "python/", "bench/", "examples/")
for e in json.load(open(sys.argv[1])):
    path = os.path.relpath(e["file"], root)
    if not path.startswith(keep_dirs):
        continue
    args = e.get("arguments") or shlex.split(e["command"])
    obj = args[args.index("-o") + 1] if "-o" in args else ""
    if marks:  # a dependency log: only what reaches the annotations
        m = marks.get(obj, set())
        if "M" not in m or (path.endswith("_test.cc") and "F" not in m):
            continue
    elif path.endswith("_test.cc"):
        continue
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a.startswith(("-fno-fat-lto", "-flto", "-fconcepts-diag")):
            continue
        out.append(a)
    print(json.dumps({"dir": e["directory"], "args": out}))
EOF
total=$(wc -l <"$list")
echo "check-thread-safety.sh: $total sources, clang thread-safety analysis as errors"
export CXX_CHECK="$cxx" FLAGS_CHECK="${flags[*]}"
# shellcheck disable=SC2016
if ! xargs -d '\n' -P "${CHECK_JOBS:-$(nproc)}" -n 1 /usr/bin/python3 -c '
import json, os, subprocess, sys
e = json.loads(sys.argv[1])
cmd = [os.environ["CXX_CHECK"]] + e["args"] + os.environ["FLAGS_CHECK"].split()
r = subprocess.run(cmd, cwd=e["dir"], capture_output=True, text=True)
if r.returncode != 0:
    sys.stderr.write(r.stderr)
    sys.exit(1)
' <"$list"; then
  echo "check-thread-safety.sh: FAILED (the findings are above)"
  exit 1
fi
echo "check-thread-safety.sh: no findings in $total sources"
