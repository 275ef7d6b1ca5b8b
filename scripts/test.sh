#!/usr/bin/env bash
# Quick start command (2): installs what is missing, builds, and runs every test suite:
# C++ unit tests (ctest), the lock-rule check (clang -Wthread-safety), the fuzz smoke, the web UI
# tests, and the cross-process suites under tests/ (pytest, real binaries on free ports). Every suite runs even when an earlier one failed; the exit code
# is non-zero when any failed. Extra arguments go to pytest. The build treats compiler warnings as
# errors (COHORT_WERROR=ON, the CI's setting; COHORT_WERROR=OFF scripts/test.sh to override).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
set -e
scripts/install-deps.sh
scripts/setup-venv.sh
COHORT_WERROR="${COHORT_WERROR:-ON}" scripts/build.sh
set +e
build="${BUILD_DIR:-$root/build}"
failed=()

echo "== C++ unit tests (ctest)"
# Every test runs once: a test that fails, fails the suite (a flaky one is fixed at its root).
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 300 || failed+=(ctest)

echo "== lock rules (scripts/check-thread-safety.sh: clang's thread-safety analysis as errors)"
"$root/scripts/check-thread-safety.sh" "$build" || failed+=(thread-safety)

echo "== fuzz smoke (scripts/fuzz.sh: libFuzzer targets, ${FUZZ_SECONDS:-10} s each)"
# The HTTP target needs a clang build of the whole server: it runs in .ci/run's extended mode;
# its corpus and regression inputs are replayed by ctest (fuzz_replay_http) above.
FUZZ_JOBS="${FUZZ_JOBS:-$(nproc)}" FUZZ_SECONDS="${FUZZ_SECONDS:-10}" "$root/scripts/fuzz.sh" graphql ingest chunk wal protocol ||
  failed+=(fuzz)

if [ -x "$root/scripts/test-ui.sh" ]; then
  echo "== web UI tests"
  "$root/scripts/test-ui.sh" || failed+=(ui)
fi

echo "== cross-process tests (pytest)"
export COHORT_BUILD_DIR="$build"
# No test may run past 10 minutes (pytest-timeout): a hang fails that test, not the whole CI.
"$root/.venv/bin/python" -m pytest -q -p no:cacheprovider --timeout 600 tests "$@" ||
  failed+=(pytest)

if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: FAILED suites: ${failed[*]}"
  exit 1
fi
echo "test.sh: all suites passed"
