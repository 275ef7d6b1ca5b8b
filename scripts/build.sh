#!/usr/bin/env bash
# Configures and builds everything into build/ (override with BUILD_DIR). Extra arguments go to
# CMake's configure step, e.g. scripts/build.sh -DCOHORT_SANITIZE=address,undefined.
# COHORT_WERROR=ON|OFF (environment) sets the CMake option of that name (warnings are errors;
# scripts/test.sh turns it on); unset, the build directory keeps what it was configured with.
# BUILD_TARGETS (environment, space-separated) builds only those targets and what they need
# (scripts/run.sh: the `cohort` binary and the Python extension; tests, benchmarks and fuzzers
# are left to scripts/test.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Let clones in other directories (CI) reuse cached objects.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
args=("$@")
if [ -n "${COHORT_WERROR:-}" ]; then
  args+=("-DCOHORT_WERROR=$COHORT_WERROR")
fi
if [ ! -f "$build/build.ninja" ] || [ ${#args[@]} -gt 0 ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${args[@]}"
fi
# A tree first configured without a Python that has nanobind (before .venv existed, or under
# another virtual environment) keeps the extension off: asked for it, turn it on with the
# project's environment, or say how.
if [[ " ${BUILD_TARGETS:-} " == *" _cohort "* ]] &&
   grep -q '^COHORT_BUILD_PYTHON:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null; then
  if [ -x "$root/.venv/bin/python" ] && "$root/.venv/bin/python" -m nanobind --cmake_dir >/dev/null 2>&1; then
    echo "build.sh: $build was configured without the Python extension; turning it on with $root/.venv/bin/python"
    cmake -S "$root" -B "$build" -DCOHORT_BUILD_PYTHON=ON -DPython_EXECUTABLE="$root/.venv/bin/python"
  else
    echo "build.sh: the Python extension (_cohort) is off in $build and $root/.venv has no nanobind;" \
      "run scripts/setup-venv.sh, then scripts/build.sh again" >&2
    exit 1
  fi
fi
jobs="${BUILD_JOBS:-$(nproc)}"
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
# The web UI (TypeScript, npm); the server serves ui/dist.
if [ -x "$root/scripts/build-ui.sh" ]; then
  "$root/scripts/build-ui.sh"
fi
