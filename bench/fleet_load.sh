#!/usr/bin/env bash
# The "Limits and load" benchmark of docs/reliability.md: one `cohort server` on loopback, a
# fleet of 10,000 keep-alive agents heartbeating plus 1,000 runs logging at 1 Hz with system
# metrics (bench/fleet_load.cc), chart-query latency idle vs under that load, the server's RSS
# and CPU. Starts its own server on a free port in a temporary directory and stops by itself.
# Prints the load generator's JSON (one line) and exits non-zero when any request failed.
# Usage: bench/fleet_load.sh
#   BUILD_DIR     the build to measure (default build/)
#   AGENTS        connected agents (default 10000)
#   RUNS          runs logging at LOG_HZ (default 1000)
#   HEARTBEAT_S   seconds between an agent's heartbeats (default 30, as src/agent/agent.h)
#   LOG_HZ        batches per second per run (default 1)
#   LOAD_S        seconds of full load (default 60); IDLE_S (10), AGENTS_ONLY_S (20)
#   CHART_POINTS  points of the charted series (default 1000000)
#   WARMUP_S      seconds at the start of a phase left out of the steady_* latencies (default 10)
#   SERVER_ARGS   extra server flags
#   TRACE_FILE    also write every request's start and latency there (fleet_load --trace-file)
#   AUTOGROUP_NICE  e.g. -15 (root): run server and generator in a session of their own whose
#                 scheduler autogroup has that nice value, so that on a shared machine they get
#                 the CPU they ask for (this kernel schedules by autogroup; plain nice does not)
#   COHORT_BIN    the server binary (default $BUILD_DIR/src/cli/cohort), e.g. an older build
#                 copied aside to measure a baseline in the same session
set -euo pipefail
if [ -n "${AUTOGROUP_NICE:-}" ] && [ -z "${FLEET_LOAD_REGROUPED:-}" ]; then
  export FLEET_LOAD_REGROUPED=1
  exec setsid --wait bash -c 'echo "$AUTOGROUP_NICE" > /proc/self/autogroup ||
    { echo "fleet_load.sh: cannot set the autogroup nice (root only)" >&2; exit 1; }
    grep -q "nice $AUTOGROUP_NICE" /proc/self/autogroup && exec "$0"' "$0"
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bin="${COHORT_BIN:-$build/src/cli/cohort}"
load="$build/bench/fleet_load"
agents="${AGENTS:-10000}"
runs="${RUNS:-1000}"
# Each connection is a descriptor on both ends: raise the soft limit as far as allowed.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
need=$(( agents + runs + 256 ))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  echo "fleet_load.sh: ulimit -n is $(ulimit -n), need $need (raise the hard limit)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
env HOME="$tmp" "$bin" server --port 0 --data-dir "$tmp/data" --no-user-config \
  --max-connections $(( agents + runs + 100 )) ${SERVER_ARGS:-} > "$tmp/out" 2> "$tmp/err" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/out" ] && break; sleep 0.1; done
url="$(head -1 "$tmp/out")"
key="$(env HOME="$tmp" "$bin" keys create --data-dir "$tmp/data" --entity fleet --role admin --name fleet)"
echo "fleet_load.sh: server $bin at $url (pid $pid), $agents agents, $runs runs" >&2
rc=0
"$load" --url "$url" --key "$key" --server-pid "$pid" --agents "$agents" --runs "$runs" \
  --heartbeat-s "${HEARTBEAT_S:-30}" --log-hz "${LOG_HZ:-1}" --load-s "${LOAD_S:-60}" \
  --idle-s "${IDLE_S:-10}" --agents-only-s "${AGENTS_ONLY_S:-20}" \
  --chart-points "${CHART_POINTS:-1000000}" --warmup-s "${WARMUP_S:-10}" \
  ${TRACE_FILE:+--trace-file "$TRACE_FILE"} || rc=$?
if grep -v "^cohort server: \(listening\|signal\|created the admin key\)\|clients on this account" "$tmp/err" | grep -q .; then
  echo "fleet_load.sh: server stderr:" >&2
  head -20 "$tmp/err" >&2
fi
exit $rc
