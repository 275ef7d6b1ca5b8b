#!/usr/bin/env bash
# Sanitizer builds of the test suites (docs/reliability.md, "Bad input").
#
# Usage: scripts/test-sanitizers.sh [asan|tsan|all] [unit|integration|both]
#   asan: build-asan, -DCOHORT_SANITIZE=address,undefined (ASan + UBSan, leaks checked)
#   tsan: build-tsan, -DCOHORT_SANITIZE=thread
#   unit: ctest (every gtest binary and the fuzz corpus replays) in that build
#   integration: pytest tests/integration with COHORT_BUILD_DIR at that build (the sanitized
#         server binary); any sanitizer report a server wrote (log_path) fails the run
# Defaults: all both. SAN_JOBS (default: nproc) sets the build parallelism; SAN_BUILD_ROOT the
# directory holding build-asan / build-tsan (default: the repository root).
#
# Runtime options: UBSan halts on the first report; ASan checks leaks; suppressions only for
# third-party code, in scripts/sanitizers/*.supp (each entry says why).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
which="${1:-all}"
suites="${2:-both}"
jobs="${SAN_JOBS:-$(nproc)}"
build_root="${SAN_BUILD_ROOT:-$root}"
supp="$root/scripts/sanitizers"
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

case "$which" in asan|tsan|all) ;; *) echo "usage: $0 [asan|tsan|all] [unit|integration|both]"; exit 2 ;; esac
case "$suites" in unit|integration|both) ;; *) echo "usage: $0 [asan|tsan|all] [unit|integration|both]"; exit 2 ;; esac

failed=()
# The first line of a sanitizer report (as tests/conftest.py's SANITIZER_MARKERS).
report_re='ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|: runtime error: '

run_one() {
  local name="$1" flags="$2"
  local build="$build_root/build-$name"
  echo "== $name: configure and build ($build, -j$jobs)"
  if [ ! -f "$build/build.ninja" ]; then
    mkdir -p "$build"
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_SANITIZE="$flags" \
      -DCOHORT_BUILD_BENCH=OFF -DCOHORT_BUILD_PYTHON=OFF >"$build/configure.log" 2>&1 ||
      { cat "$build/configure.log"; failed+=("$name-build"); return; }
  fi
  local start=$(date +%s)
  # The integration suite needs only the `cohort` binary (tests/conftest.py) and the fake NVML
  # that tests/integration/test_alerts_gpu.py's agents load; ctest needs all.
  local targets=""
  [ "$suites" = integration ] && targets="src/cli/cohort fake_nvml"
  ninja -C "$build" -j"$jobs" $targets || { failed+=("$name-build"); return; }
  echo "== $name: built in $(( $(date +%s) - start )) s"

  local logs="$build/sanitizer-logs"
  rm -rf "$logs"
  mkdir -p "$logs"
  # Reports go to files as well, so that those of server processes started by pytest are seen.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:log_path=$logs/asan"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp:log_path=$logs/ubsan"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$logs/tsan"

  if [ "$suites" != integration ]; then
    echo "== $name: unit tests (ctest)"
    start=$(date +%s)
    ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 ${exclude:+-E "$exclude"} ||
      failed+=("$name-unit")
    echo "== $name: unit tests took $(( $(date +%s) - start )) s"
    # g++'s UBSan under ASan prints to stderr only (log_path is ignored): a report of a child
    # process whose exit status a test does not check would pass unseen. ctest keeps every
    # test's whole output in LastTest.log.
    local last="$build/Testing/Temporary/LastTest.log"
    if grep -qE "$report_re" "$last" 2>/dev/null; then
      echo "== $name: sanitizer reports in the output of passing tests ($last):"
      grep -nE -A12 "$report_re" "$last" | head -120
      failed+=("$name-unit-output")
    fi
  fi
  if [ "$suites" != unit ]; then
    echo "== $name: integration tests (pytest tests/integration)"
    start=$(date +%s)
    COHORT_BUILD_DIR="$build" "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider \
      --timeout 600 tests/integration || failed+=("$name-integration")
    echo "== $name: integration tests took $(( $(date +%s) - start )) s"
  fi
  if [ -n "$(ls -A "$logs")" ]; then
    echo "== $name: sanitizer reports:"
    for f in "$logs"/*; do echo "--- $f"; head -60 "$f"; done
    failed+=("$name-reports")
  fi
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
}

# Not run under TSan: the client tests whose child process goes on logging after fork() of a
# multi-threaded process (a PyTorch DataLoader worker does). TSan cannot follow such a child
# ("starting new threads after multi-threaded fork is not supported"; with die_after_fork=0 it
# stops checking and fails with "dup thread with used id": google/sanitizers#1590,
# llvm/llvm-project#96600). They run in the plain and the ASan+UBSan builds.
tsan_exclude='^RunTest\.(ForkedChildLogsUnderItsOwnLabel|SigtermInAForkedChildThatLoggedMarksItsWriterKilled)$'

[ "$which" = asan ] || [ "$which" = all ] && exclude="" run_one asan "address,undefined"
[ "$which" = tsan ] || [ "$which" = all ] && exclude="$tsan_exclude" run_one tsan "thread"

if [ ${#failed[@]} -gt 0 ]; then
  echo "test-sanitizers.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test-sanitizers.sh: $which ($suites) passed without sanitizer reports"
