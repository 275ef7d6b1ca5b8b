#!/usr/bin/env bash
# Server benchmarks of docs/benchmarks.md: HTTP ingest with 1/4/16 clients and several batch
# sizes, history query over 1M points, and the SQLite row-per-point baseline, each repeated;
# prints a Markdown table of medians. Starts its own server on a free port in a temporary
# directory; loopback only.
# Usage: bench/server_bench.sh [REPEATS]
#   BUILD_DIR   the build to measure (default build/)
#   COHORT_BIN  the server binary (default $BUILD_DIR/src/cli/cohort), e.g. an older build
#               copied aside to measure a baseline in the same session
#   ROWS        rows per batch to measure (default "100 1000 6554"; 6,554 rows x 10 keys is the
#               65,536-cell batch the client library flushes under load, log_buffer.h)
#   CLIENTS     client counts (default "1 4 16")
#   SERVER_ENV  extra environment for the server, e.g. "MALLOC_ARENA_MAX=8"
#   FORMAT      ingest bodies: json (default) or binary (the agent's batch v4)
#   ORDERED=1   batches marked Cohort-Batch-Ordered: <stream>, as the agent marks them (no exactly-once
#               record per batch; docs/api.md); default 0
#   AUTO_VACUUM=0  the database file made beforehand without auto_vacuum (as a file made before the
#               store set auto_vacuum=INCREMENTAL: no pointer-map pages), to measure their cost
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bin="${COHORT_BIN:-$build/src/cli/cohort}"
repeats="${1:-3}"
rows_list="${ROWS:-100 1000 6554}"
clients_list="${CLIENTS:-1 4 16}"
tmp="$(mktemp -d)"
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [ "${AUTO_VACUUM:-1}" = 0 ]; then
  mkdir -p "$tmp/data"
  sqlite3 "$tmp/data/cohort.db" 'CREATE TABLE made_before (x); DROP TABLE made_before;'
  chmod 600 "$tmp/data/cohort.db"  # as the store makes it
fi
# shellcheck disable=SC2086
env HOME="$tmp" ${SERVER_ENV:-} "$bin" server --port 0 --data-dir "$tmp/data" > "$tmp/out" 2> "$tmp/err" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/out" ] && break; sleep 0.1; done
url="$(head -1 "$tmp/out")"
key="$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["api_key"])' "$tmp/.config/cohort/config.json")"
load="$build/bench/http_load"
median() { python3 -c 'import json,sys,statistics as s; rows=[json.loads(l) for l in sys.stdin if l.strip()]; k=sys.argv[1]; print(round(s.median(r[k] for r in rows), 3))' "$1"; }
run() { for i in $(seq "$repeats"); do "$@"; done; }
rss() { awk '/VmRSS/ {print int($2 / 1024)}' /proc/$pid/status; }

echo "server: $bin at $url (repeats: $repeats, auto_vacuum: ${AUTO_VACUUM:-1})" >&2
echo "| measurement | median |"
echo "| --- | --- |"
for rows in $rows_list; do
  # About 200k points per client per repetition, at least 10 batches.
  batches=$(( 20000 / rows )); [ "$batches" -lt 10 ] && batches=10
  for clients in $clients_list; do
    out="$(run "$load" ingest --url "$url" --key "$key" --clients "$clients" --batches "$batches" --rows "$rows" --keys 10 --format "${FORMAT:-json}" --ordered "${ORDERED:-0}")"
    echo "| HTTP ingest, $clients clients, $rows rows x 10 keys per batch: points/s | $(median points_per_s <<< "$out") |"
    echo "| HTTP ingest, $clients clients, $rows rows: batch latency p50 / p99 ms | $(median batch_ms_p50 <<< "$out") / $(median batch_ms_p99 <<< "$out") |"
  done
  echo "| server RSS after the $rows-row runs: MB | $(rss) |"
done
echo "| server peak RSS during ingest: MB | $(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$pid/status) |"
out="$(run "$load" sqlite-baseline --points 1000000 --keys 10)"
echo "| baseline: SQLite row per point, same machine: points/s | $(median points_per_s <<< "$out") |"
echo "| baseline: SQLite row per point: bytes/point | $(median bytes_per_point <<< "$out") |"
out="$(run "$load" query --url "$url" --key "$key" --points 1000000 --repeat 10)"
echo "| read one key's 1M points raw (paged JSON): ms | $(median raw_read_ms_p50 <<< "$out") |"
echo "| chart query, 1M points -> 1,000 buckets: ms | $(median buckets_1000_ms_p50 <<< "$out") |"
rss_kb="$(awk '/VmHWM/ {print $2}' /proc/$pid/status)"
echo "| server peak RSS during the whole run (with the 1M-point reads): MB | $((rss_kb / 1024)) |"
