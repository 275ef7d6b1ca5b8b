#!/usr/bin/env bash
# The S3 backend's artifact benchmark of docs/benchmarks.md ("Artifacts through S3"): a SIZE_MB
# file (default 2048) put with `cohort artifact put` through a `cohort server` whose blob store is
# a real SeaweedFS weed (tests/s3/weed.py, on loopback, its data on this disk), then downloaded
# with `cohort artifact get` (ranged, verified); side by side, the presigned-URL alternative
# measured raw (bench/s3_presigned_transfer.py: the same bytes PUT straight to weed in 8 MiB parts
# with SigV4 presigned URLs, and read back through SHA-256 as the server's verification would),
# and this disk's own bandwidth with dd in the same run. Peak RSS of the CLI, the server (VmHWM
# after the put, and after the get too) and weed.
# Each repetition starts a fresh weed and server in a temporary directory. Prints a Markdown
# table of medians.
# Usage: bench/artifact_s3_bench.sh [REPEATS]      (BUILD_DIR, SIZE_MB, TMPDIR as usual; needs
# scripts/build-weed.sh to have run)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bin="$build/src/cli/cohort"
repeats="${1:-3}"
size_mb="${SIZE_MB:-2048}"
python3 -c "import sys; sys.path.insert(0, '$root/tests/s3'); import weed; sys.exit(0 if weed.weed_binary() else 1)" ||
  { echo "SeaweedFS weed is not built: run scripts/build-weed.sh" >&2; exit 1; }
tmp="$(mktemp -d)"
pid=""
weed_dir=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$weed_dir" ] && python3 "$root/tests/s3/weed.py" stop "$weed_dir" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
file="$tmp/weights.bin"
echo "making a ${size_mb} MiB file of random bytes in $tmp" >&2
python3 - "$file" "$size_mb" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for _ in range(int(sys.argv[2])):
        f.write(os.urandom(1 << 20))
PY
results="$tmp/results.jsonl"
secs() { python3 -c 'import time; print(time.time())'; }
for rep in $(seq "$repeats"); do
  run="$tmp/run$rep"; mkdir -p "$run"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  t0=$(secs); dd if="$file" of="$run/copy" bs=8M conv=fdatasync status=none; t1=$(secs)
  rm -f "$run/copy"
  t2=$(secs); dd if="$file" of=/dev/null bs=8M status=none; t3=$(secs)
  weed_dir="$run/weed"
  endpoint="$(python3 "$root/tests/s3/weed.py" start "$weed_dir")"
  weed_pid="$(cat "$weed_dir/weed.pid")"
  COHORT_S3_ACCESS_KEY=cohort-test COHORT_S3_SECRET_KEY=cohort-test-secret HOME="$run" \
    "$bin" server --port 0 --data-dir "$run/data" --blob-s3-endpoint "$endpoint" \
    --blob-s3-bucket bench > "$run/out" 2> "$run/err" &
  pid=$!
  for _ in $(seq 300); do [ -s "$run/out" ] && break; sleep 0.1; done
  [ -s "$run/out" ] || { cat "$run/err" >&2; exit 1; }
  cli() { HOME="$run" /usr/bin/time -f "%e %M" -o "$run/time" "$bin" "$@"; }
  cli artifact put "$file" --name big --type model -p bench > /dev/null 2> "$run/put.err" ||
    { cat "$run/put.err" "$run/err" >&2; exit 1; }
  read -r put_s put_kb < "$run/time"
  server_put_mb=$(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$pid/status)
  cli artifact get bench/big --root "$run/dl" > /dev/null 2> "$run/get.err" ||
    { cat "$run/get.err" >&2; exit 1; }
  read -r get_s get_kb < "$run/time"
  cmp -s "$file" "$run/dl/weights.bin" || { echo "downloaded bytes differ" >&2; exit 1; }
  rm -rf "$run/dl"
  server_mb=$(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$pid/status)
  kill $pid; wait $pid 2>/dev/null || true; pid=""
  presigned="$(python3 "$root/bench/s3_presigned_transfer.py" "$endpoint" presigned "$file")"
  weed_mb=$(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$weed_pid/status)
  python3 "$root/tests/s3/weed.py" stop "$weed_dir"; weed_dir=""
  python3 - "$size_mb" "$t0" "$t1" "$t2" "$t3" "$put_s" "$put_kb" "$get_s" "$get_kb" \
      "$server_mb" "$weed_mb" "$load" "$server_put_mb" "$presigned" >> "$results" <<'PY'
import json, sys
mb = float(sys.argv[1]); t0, t1, t2, t3 = map(float, sys.argv[2:6])
put_s, put_kb, get_s, get_kb, server_mb, weed_mb, load, server_put_mb = map(float, sys.argv[6:14])
p = json.loads(sys.argv[14])
print(json.dumps({"disk_write_mbs": mb / (t1 - t0), "disk_read_mbs": mb / (t3 - t2),
                  "put_mbs": mb / put_s, "put_s": put_s, "get_mbs": mb / get_s, "get_s": get_s,
                  "cli_put_rss_mb": put_kb / 1024, "cli_get_rss_mb": get_kb / 1024,
                  "server_peak_rss_mb": server_mb, "server_put_peak_rss_mb": server_put_mb,
                  "weed_peak_rss_mb": weed_mb, "load": load,
                  "presigned_put_s": p["put_s"], "presigned_put_mbs": mb / p["put_s"],
                  "presigned_get_s": p["get_s"], "presigned_get_mbs": mb / p["get_s"]}))
PY
  rm -rf "$run"
  echo "repetition $rep done" >&2
done
python3 - "$results" "$size_mb" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k: st.median(r[k] for r in rows)
print(f"| measurement ({sys.argv[2]} MiB, median of {len(rows)}; load average at start {min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}) | value |")
print("| --- | --- |")
print(f"| disk write, dd with fdatasync | {med('disk_write_mbs'):.0f} MiB/s |")
print(f"| disk read, dd (page cache as it is) | {med('disk_read_mbs'):.0f} MiB/s |")
print(f"| `cohort artifact put` through the server to weed (parts, verify by reading back, publish by server-side copy) | {med('put_mbs'):.0f} MiB/s ({med('put_s'):.1f} s), {100 * med('put_mbs') / med('disk_write_mbs'):.0f}% of disk write |")
print(f"| `cohort artifact get` through the server from weed (ranged, verified) | {med('get_mbs'):.0f} MiB/s ({med('get_s'):.1f} s), {100 * med('get_mbs') / med('disk_read_mbs'):.0f}% of disk read |")
print(f"| presigned PUTs straight to weed, same bytes, same 8 MiB parts (raw transfer only) | {med('presigned_put_mbs'):.0f} MiB/s ({med('presigned_put_s'):.1f} s) |")
print(f"| presigned GETs of those parts through SHA-256 (what verifying a presigned upload costs) | {med('presigned_get_mbs'):.0f} MiB/s ({med('presigned_get_s'):.1f} s) |")
print(f"| peak RSS: server (through the put; through the get too) | {med('server_put_peak_rss_mb'):.0f}; {med('server_peak_rss_mb'):.0f} MiB |")
print(f"| peak RSS: put / get / weed | {med('cli_put_rss_mb'):.0f} / {med('cli_get_rss_mb'):.0f} / {med('weed_peak_rss_mb'):.0f} MiB |")
PY
