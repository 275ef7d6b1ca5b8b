#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang-14, ASan+UBSan, build dir build-fuzz) and
# runs each for FUZZ_SECONDS (default 10) over a copy of its seed corpus
# (tests/fuzz/corpus/<target>) plus its regression inputs (tests/fuzz/regressions/<target>).
# A crash, leak, UB report, timeout or failed property check fails the script; the input that
# caused it is saved as build-fuzz/findings/<target>/crash-* (add it to tests/fuzz/regressions/
# <target>/ once fixed: ctest then replays it in every build).
#
# Usage: scripts/fuzz.sh [target...]        targets: http ingest ingest_binary chunk wal graphql protocol
#   FUZZ_SECONDS=600 scripts/fuzz.sh        longer runs
#   FUZZ_BUILD_DIR=...                      another build directory
#   FUZZ_KEEP_CORPUS=1                      merge new corpus inputs back into tests/fuzz/corpus
#   FUZZ_SKIP_BUILD=1                       run the binaries already built
# Needs clang-14 and libclang-rt-14-dev (scripts/install-deps.sh). Builds only the libraries
# the targets link (-j1 unless FUZZ_JOBS is set).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-10}"
jobs="${FUZZ_JOBS:-1}"
all=(http ingest ingest_binary chunk wal graphql protocol)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (${all[*]})"; exit 2; }
done
if ! command -v clang++-14 >/dev/null; then
  echo "fuzz.sh: clang++-14 is missing (run scripts/install-deps.sh)"
  exit 2
fi

export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCOHORT_FUZZ=ON -DCOHORT_BUILD_TESTS=OFF -DCOHORT_BUILD_BENCH=OFF \
    -DCOHORT_BUILD_PYTHON=OFF >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; echo "fuzz.sh: configure failed"; exit 1; }
fi
if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  start=$(date +%s)
  ninja -C "$build" -j"$jobs" "${targets[@]/%/_fuzzer}" || { echo "fuzz.sh: build failed"; exit 1; }
  echo "fuzz.sh: built in $(( $(date +%s) - start )) s"
fi

# UBSan reports abort (so libFuzzer saves the input); leaks are reported at the end of a run.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
failed=()
summary=()
for t in "${targets[@]}"; do
  work="$build/fuzz-work/$t"
  findings="$build/findings/$t"
  rm -rf "$work"
  mkdir -p "$work" "$findings"
  cp -r "tests/fuzz/corpus/$t/." "$work/"
  regress="tests/fuzz/regressions/$t"
  extra=()
  [ -d "$regress" ] && extra+=("$regress")
  max_len=8192
  case "$t" in
    wal) max_len=131072 ;;
    http) max_len=16384 ;;
    chunk) max_len=32768 ;;
  esac
  echo "== fuzz $t for ${seconds}s"
  log="$build/fuzz-$t.log"
  "$build/tests/fuzz/${t}_fuzzer" "$work" "${extra[@]}" -max_total_time="$seconds" \
    -max_len="$max_len" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$findings/" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  corpus=$(ls "$work" | wc -l)
  summary+=("$t: rc=$rc execs=${execs:-?} exec/s=${speed:-?} cov=${cov:-?} corpus=$corpus")
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    echo "fuzz.sh: $t FAILED (rc=$rc); log $log; inputs in $findings:"
    ls "$findings"
    grep -A30 -m1 'ERROR\|FUZZ_CHECK\|runtime error\|deadly signal' "$log" | head -60
  fi
  if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ] && [ $rc -eq 0 ]; then
    "$build/tests/fuzz/${t}_fuzzer" -merge=1 -max_len="$max_len" "tests/fuzz/corpus/$t" \
      "$work" >>"$log" 2>&1
  fi
done
printf 'fuzz.sh: %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED targets: ${failed[*]}"
  exit 1
fi
echo "fuzz.sh: all targets ran ${seconds}s without findings"
