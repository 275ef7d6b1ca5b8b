#!/usr/bin/env bash
# Builds and checks the Python package on several CPython versions (docs/python.md, "Python
# versions"):
#   - the wheel built with 3.12 is the stable-ABI one (cp312-abi3); that same file is installed
#     into fresh 3.12 and 3.13 virtual environments;
#   - `pip install .` from source into fresh 3.9 and 3.10 environments (version-specific
#     extension);
# and in each environment: an import check (the installed package, its extension and its
# `cohort` binary, not the source tree) and an offline-mode smoke run (init, log, finish, the
# records in the WAL; the agent is the wheel's own `cohort agent`).
#
# Needs network access for pip (the isolated build fetches scikit-build-core and nanobind), so
# it is not part of the default suite: tests/python/test_wheels.py runs it when
# COHORT_WHEEL_TESTS=1. It works on a copy of the source tree (the files git tracks or would
# track) in a temporary directory, removed at the end unless KEEP_WHEEL_WORK=1: nothing is
# built in the tree. One CMake build directory (<copy>/build-wheel) is shared by the four builds,
# so only the extension is rebuilt per Python, and it sits one level below the copy's root as
# build-*/ does below the tree's, so that ccache (CCACHE_BASEDIR) reuses the objects of the
# developers' builds.
#
# Interpreters: $COHORT_PY39, $COHORT_PY310, $COHORT_PY312, $COHORT_PY313, else the newest
# $PYENV_ROOT/versions/3.N.*/bin/python (PYENV_ROOT defaults to ~/.pyenv), else python3.N on PATH.
# Build parallelism: CMAKE_BUILD_PARALLEL_LEVEL (default 1: the development machine is shared).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/cohort-wheels-XXXXXX")"
cleanup() {
  # Stop the agents the smoke runs spawned (each environment has its own runtime dir).
  for lock in "$work"/env-*/run/cohort/agent.lock; do
    [ -f "$lock" ] || continue
    pid="$(head -c 20 "$lock" | tr -dc 0-9)"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  if [ "${KEEP_WHEEL_WORK:-0}" = 1 ]; then
    echo "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-1}"
src="$work/main"
export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
# The compilers CMake picks for the developers' builds (c++/cc), so that ccache's entries match.
export CXX="${CXX:-c++}" CC="${CC:-cc}"
unset COHORT_BUILD_DIR COHORT_BIN COHORT_AGENT_SOCKET COHORT_AGENT PYTHONPATH VIRTUAL_ENV

. "$root/scripts/lib/pythons.sh"  # find_python
need_python() {  # need_python 3.N -> the interpreter, or exit naming the variable to set
  local found
  found="$(find_python "$1")"
  if [ -z "$found" ]; then
    echo "test-wheels: no Python $1 found (set COHORT_PY${1/./})" >&2
    exit 1
  fi
  echo "$found"
}

py39="$(need_python 3.9)"
py310="$(need_python 3.10)"
py312="$(need_python 3.12)"
py313="$(need_python 3.13)"
# The build directory is passed to scikit-build-core (instead of pyproject's build-wheel/{tag}).
build_settings=(--config-settings=build-dir="$src/build-wheel")

copy_source() {
  mkdir -p "$src"
  (cd "$root" && git ls-files -z --cached --others --exclude-standard) |
    while IFS= read -r -d '' f; do
      [ -f "$root/$f" ] && printf '%s\0' "$f"
    done | tar -C "$root" --null -T - -cf - | tar -C "$src" -xf -
}

make_env() {  # make_env NAME PYTHON -> prints the venv's python
  local name="$1" python="$2"
  "$python" -m venv "$work/env-$name" >&2
  "$work/env-$name/bin/python" -m pip install -q --upgrade pip >&2
  echo "$work/env-$name/bin/python"
}

smoke() {  # smoke NAME VENV_PYTHON
  local name="$1" python="$2" home="$work/env-$1"
  mkdir -p "$home/home" "$home/run"
  echo "== $name: import check and offline smoke ($("$python" -V 2>&1))"
  (cd "$home" && env HOME="$home/home" XDG_RUNTIME_DIR="$home/run" COHORT_MODE=offline \
    COHORT_DIR="$home/data" "$python" - "$home" <<'EOF'
import glob, os, sys, sysconfig

home = sys.argv[1]
import cohort
from cohort import _native

site = sysconfig.get_paths()["purelib"]
assert os.path.realpath(cohort.__file__).startswith(os.path.realpath(site)), cohort.__file__
ext = _native.native
assert os.path.realpath(ext.__file__).startswith(os.path.realpath(site)), ext.__file__
binary = os.environ["COHORT_BIN"]
assert os.path.realpath(binary).startswith(os.path.realpath(site)), binary
assert os.access(binary, os.X_OK), binary
print("extension:", os.path.basename(ext.__file__))

# One version: the wheel's metadata (scikit-build-core read CMakeLists.txt), the extension's
# (compiled from the same line), and `python -m cohort --version`.
import importlib.metadata, subprocess
assert importlib.metadata.version("cohort") == cohort.__version__, (
    importlib.metadata.version("cohort"), cohort.__version__)
shown = subprocess.run([sys.executable, "-m", "cohort", "--version"], capture_output=True,
                       text=True, check=True).stdout.strip()
assert shown == "cohort " + cohort.__version__, shown
print("version:", cohort.__version__)

run = cohort.init(project="wheel-smoke", config={"lr": 0.1},
                  settings=cohort.Settings(init_timeout=60, finish_timeout=60))
assert run.id, "no run id"
for step in range(200):
    run.log({"loss": 1.0 / (step + 1), "nested": {"acc": step / 200}})
run.summary["best"] = 0.5
run.finish()
wal = glob.glob(os.path.join(home, "data", run.id, "*", "wal", "*"))
size = sum(os.path.getsize(p) for p in wal if os.path.isfile(p))
assert size > 200 * 8, f"WAL of {run.id} holds {size} bytes: {wal}"
print(f"offline run {run.id}: {size} WAL bytes")
EOF
  )
}

echo "== work directory: $work"
copy_source
echo "== source copied to $src ($(du -sh "$src" | cut -f1))"
echo "== 3.12: build the stable-ABI wheel ($py312)"
env312="$(make_env 3.12 "$py312")"
"$env312" -m pip wheel -q --no-deps -w "$work/dist" "${build_settings[@]}" "$src"
wheel="$(ls "$work"/dist/cohort-*.whl)"
echo "built $(basename "$wheel")"
case "$(basename "$wheel")" in
  *-cp312-abi3-*) ;;
  *) echo "test-wheels: expected a cp312-abi3 wheel" >&2; exit 1 ;;
esac
"$env312" -m pip install -q "$wheel"
smoke 3.12 "$env312"

echo "== 3.13: the same abi3 wheel ($py313)"
env313="$(make_env 3.13 "$py313")"
"$env313" -m pip install -q "$wheel"
smoke 3.13 "$env313"

for v in 3.9 3.10; do
  py="$py39"
  [ "$v" = 3.10 ] && py="$py310"
  echo "== $v: pip install . from source ($py)"
  envpy="$(make_env "$v" "$py")"
  "$envpy" -m pip install -q "${build_settings[@]}" "$src"
  smoke "$v" "$envpy"
done
echo "== all wheels ok"
