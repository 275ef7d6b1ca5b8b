#!/usr/bin/env bash
# PostgreSQL ingest benchmark (docs/operations.md, "Scale-out on PostgreSQL"): durable HTTP ingest
# through `cohort server --store postgresql://...` with 1/4/16 clients, and in the same run the
# baseline a row-per-point tracker gets from the same cluster: libpq COPY (binary) of the same
# points into a (run, key, step, time, value) table. Prints a Markdown table of medians.
#
# Starts its own throwaway cluster (tests/postgres/pg_cluster.py, fsync on: every acknowledged
# batch is on disk) and server in a temporary directory; loopback and a Unix socket only.
# Usage: bench/pg_bench.sh [REPEATS]
#   BUILD_DIR  the build to use (default build/)
#   COHORT_BIN the server binary (default $BUILD_DIR/src/cli/cohort), e.g. an older build copied
#              aside to measure a baseline in the same session
#   SERVERS=2  two servers on the database, the clients split between them
#   ROWS=1000  rows (steps of 10 keys) per batch (default 100); BATCHES batches per client
#   BASELINE=0 skip the libpq COPY baseline (e.g. when measuring a second server binary)
#   STORE_OPTS store URL options for the servers, e.g. ingest_cache=off (docs/operations.md)
#   FORMAT=binary  batch bodies in the agent's binary encoding (what `cohort agent` sends);
#              default json
#   ORDERED=1  batches marked Cohort-Batch-Ordered: <stream>, as the agent marks them (no exactly-once
#              record per batch; docs/api.md); default 0
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bin="${COHORT_BIN:-$build/src/cli/cohort}"
repeats="${1:-3}"
servers="${SERVERS:-1}"
batches="${BATCHES:-300}"
rows="${ROWS:-100}"
tmp="$(mktemp -d)"
pgdir="$(mktemp -d -u /tmp/cohort-pgbench-XXXXXX)"  # made by pg_cluster.py, owned by postgres
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  python3 "$root/tests/postgres/pg_cluster.py" stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# A durable cluster sized for bulk ingest: WAL big enough that no checkpoint lands mid-run.
url="$(python3 "$root/tests/postgres/pg_cluster.py" start "$pgdir" --durable \
  --set shared_buffers=1GB --set max_wal_size=8GB --set checkpoint_timeout=30min \
  --set wal_buffers=64MB)"
urls=()
for s in $(seq "$servers"); do
  HOME="$tmp/home$s" "$bin" server --port 0 --data-dir "$tmp/data$s" \
    --store "$url&pool_size=16${STORE_OPTS:+&$STORE_OPTS}" > "$tmp/out$s" 2> "$tmp/err$s" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$tmp/out$s" ] && break; sleep 0.1; done
  urls+=("$(head -1 "$tmp/out$s")")
  [ -n "${urls[-1]}" ] || { cat "$tmp/err$s" >&2; exit 1; }
done
key="$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["api_key"])' \
  "$tmp/home1/.config/cohort/config.json")"
load="$build/bench/http_load"
median() { python3 -c 'import json,sys,statistics as s; rows=[json.loads(l) for l in sys.stdin if l.strip()]; k=sys.argv[1]; print(round(s.median(r[k] for r in rows), 3))' "$1"; }

# CPU time (ms) so far of the servers (`cpu_ms server`) or of the cluster's processes
# (`cpu_ms db`), from /proc: under load (other work on the same cores) CPU per point is
# steadier than points/s.
cpu_ms() {
  local of=("${pids[@]}") master
  if [ "$1" = db ]; then
    master="$(head -1 "$pgdir/data/postmaster.pid")"
    of=("$master" $(pgrep -P "$master"))
  fi
  python3 -c '
import os, sys
total = 0
for pid in sys.argv[1:]:
    try:
        total += sum(int(x) for x in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[11:13])
    except (OSError, ValueError):
        pass
print(total * 1000 // os.sysconf("SC_CLK_TCK"))' "${of[@]}"
}

# Runs http_load with `clients` split over the servers at once; prints one JSON line whose
# points_per_s is the total over the wall time of the slowest, and the CPU time per point of
# the servers and of PostgreSQL over the run.
ingest() {
  local per=$(( $1 / servers )) outs=() loaders=() i=0 s0 d0
  s0="$(cpu_ms server)"
  d0="$(cpu_ms db)"
  for u in "${urls[@]}"; do
    "$load" ingest --url "$u" --key "$key" --clients "$per" --batches "$batches" --rows "$rows" \
      --keys 10 --format "${FORMAT:-json}" --ordered "${ORDERED:-0}" > "$tmp/load$i" &
    loaders+=($!); outs+=("$tmp/load$i"); i=$((i + 1))
  done
  for p in "${loaders[@]}"; do wait "$p"; done
  python3 - "$(( $(cpu_ms server) - s0 ))" "$(( $(cpu_ms db) - d0 ))" "${outs[@]}" <<'EOF'
import json, sys
server_ms, db_ms = int(sys.argv[1]), int(sys.argv[2])
rows = [json.loads(open(f).read()) for f in sys.argv[3:]]
points = sum(r["points"] for r in rows)
secs = max(r["seconds"] for r in rows)
print(json.dumps({"points": points, "seconds": secs, "points_per_s": points / secs,
                  "server_us_per_point": server_ms * 1000 / points,
                  "db_us_per_point": db_ms * 1000 / points,
                  "batch_ms_p50": max(r["batch_ms_p50"] for r in rows),
                  "batch_ms_p99": max(r["batch_ms_p99"] for r in rows),
                  "failed": sum(r["failed"] for r in rows)}))
EOF
}

echo "servers: ${urls[*]} on $url (repeats: $repeats)" >&2
pg_bin="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import pg_cluster; print(pg_cluster.find_bin_dir())' "$root/tests/postgres")"
psql_cohort() { "$pg_bin/psql" -X -At -h "$pgdir" -p "$(cat "$pgdir/port")" -U postgres -d cohort -c "$1"; }
echo "| measurement (PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}'), fsync on, $servers server(s)) | median |"
echo "| --- | --- |"
for clients in 1 4 16; do
  [ "$clients" -ge "$servers" ] || continue
  out="$(for i in $(seq "$repeats"); do ingest "$clients"; done)"
  echo "| HTTP ingest, $clients clients, $rows rows x 10 keys per batch: points/s | $(median points_per_s <<< "$out") |"
  echo "| HTTP ingest, $clients clients: batch latency p50 / p99 ms | $(median batch_ms_p50 <<< "$out") / $(median batch_ms_p99 <<< "$out") |"
  echo "| HTTP ingest, $clients clients: CPU us/point, server / PostgreSQL | $(median server_us_per_point <<< "$out") / $(median db_us_per_point <<< "$out") |"
done
points=$(( 16 * batches * rows * 10 ))
for clients in 1 4; do
  [ "${BASELINE:-1}" = 1 ] || continue
  out="$(for i in $(seq "$repeats"); do "$build/bench/pg_copy_baseline" --url "$url" --points "$points" --keys 10 --clients "$clients"; done)"
  echo "| baseline: libpq COPY row per point, $clients connection(s), $points points: points/s | $(median points_per_s <<< "$out") |"
  echo "| baseline: row per point: bytes/point on disk | $(median bytes_per_point <<< "$out") |"
done
psql_cohort "VACUUM chunks, series" >/dev/null  # compacted tail chunks leave dead rows
# chunks is partitioned (chunks_sealed, chunks_tail, the parent holding nothing; one table in
# older builds)
bytes="$(psql_cohort "SELECT sum(pg_total_relation_size(oid)) FROM pg_class WHERE relname IN ('chunks', 'chunks_sealed', 'chunks_tail', 'series')")"
stored="$(psql_cohort "SELECT sum(count) FROM series")"
data="$(psql_cohort "SELECT round(sum(length(data))::numeric / sum(count), 2) FROM chunks")"
live="$(psql_cohort "SELECT round(sum(pg_column_size(c.*))::numeric / sum(count), 2) FROM chunks c")"
echo "| Cohort: bytes/point on disk (chunks + series tables and indexes, after VACUUM, $stored points) | $(python3 -c "print(round($bytes / $stored, 2))") |"
echo "| Cohort: live chunk rows bytes/point (the rest is space freed by tail compaction, reused by later inserts) | $live |"
echo "| Cohort: encoded chunk bytes/point (the codec's share) | $data |"
for i in "${!pids[@]}"; do
  rss_kb="$(awk '/VmHWM/ {print $2}' "/proc/${pids[$i]}/status")"
  echo "| server $((i + 1)) peak RSS: MB | $((rss_kb / 1024)) |"
done
