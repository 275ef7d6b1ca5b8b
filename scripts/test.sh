#!/usr/bin/env bash
# Quick start command (2): installs what is missing, builds, and runs every test suite:
# C++ unit tests (ctest) and the cross-process suites under tests/ (pytest, real binaries).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/install-deps.sh
scripts/setup-venv.sh
scripts/build.sh
build="${BUILD_DIR:-$root/build}"
echo "== C++ unit tests (ctest)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 300
echo "== cross-process tests (pytest)"
export COHORT_BUILD_DIR="$build"
"$root/.venv/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
