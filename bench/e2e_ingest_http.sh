#!/bin/bash
# Server-alone ingest, JSON vs binary batch bodies (docs/benchmarks.md, "Binary batch bodies"):
# one fresh `cohort server --port 0` (SQLite) in a temporary HOME; for 1,000- and 6,554-row
# batches, `http_load ingest` with 4 clients (~8M points per run) first with JSON bodies, then
# with binary ones, REPS runs each; prints http_load's JSON line and the server's CPU (utime +
# stime, clock ticks) over each run.
#   BUILD_DIR=build bench/e2e_ingest_http.sh 3
set -euo pipefail
REPS=${1:-3}
BUILD_DIR=${BUILD_DIR:-build}
BIN=${COHORT_BIN:-$BUILD_DIR/src/cli/cohort}
LOAD=$BUILD_DIR/bench/http_load
H=$(mktemp -d /tmp/cohort-http-bench-XXXXXX)
mkdir -p "$H/run"
HOME=$H XDG_RUNTIME_DIR=$H/run XDG_CONFIG_HOME= XDG_DATA_HOME= \
  "$BIN" server --port 0 --data-dir "$H/data" >"$H/out" 2>"$H/err" &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$H"' EXIT
for _ in $(seq 100); do grep -q http "$H/out" 2>/dev/null && break; sleep 0.1; done
URL=$(head -1 "$H/out")
KEY=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['api_key'])" \
      "$H/.config/cohort/config.json")
for rows in 1000 6554; do
  for fmt in json binary; do
    for _ in $(seq "$REPS"); do
      c0=$(awk '{print $14+$15}' /proc/$SP/stat)
      out=$("$LOAD" ingest --url "$URL" --key "$KEY" --clients 4 --batches $((200000 / rows)) \
            --rows "$rows" --keys 10 --format "$fmt")
      c1=$(awk '{print $14+$15}' /proc/$SP/stat)
      echo "rows=$rows $out server_cpu_ticks=$((c1 - c0))"
    done
  done
done
