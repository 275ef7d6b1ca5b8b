#!/usr/bin/env bash
# Artifact transfer benchmark of docs/benchmarks.md ("Artifacts"): a SIZE_MB file (default
# 2048) uploaded with `cohort artifact put` to the local blob store, put again unchanged, and
# downloaded (ranged, verified) with `cohort artifact get`, against this disk's own bandwidth
# measured in the same run with dd (write with fdatasync, read). Peak RSS of the CLI (/usr/bin/time)
# and of the server (VmHWM). Each repetition starts a fresh server in a temporary directory on
# the same disk; loopback only. Prints a Markdown table of medians.
# Usage: bench/artifact_bench.sh [REPEATS]      (BUILD_DIR, SIZE_MB, TMPDIR as usual)
#   COLD=1  (root) also measure from the disk rather than the page cache: the kernel's caches are
#           dropped (sync; /proc/sys/vm/drop_caches) before a second dd read and before the
#           `get`, so the download reads the blob from the disk as a restore on a fresh node does
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
bin="$build/src/cli/cohort"
repeats="${1:-3}"
size_mb="${SIZE_MB:-2048}"
tmp="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
file="$tmp/weights.bin"
echo "making a ${size_mb} MiB file of random bytes in $tmp" >&2
python3 - "$file" "$size_mb" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for _ in range(int(sys.argv[2])):
        f.write(os.urandom(1 << 20))
PY
results="$tmp/results.jsonl"
secs() { python3 -c 'import sys,time; print(time.time())'; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
for rep in $(seq "$repeats"); do
  run="$tmp/run$rep"; mkdir -p "$run"
  # Each measured step starts with `sync`: the previous step's bytes still being written back
  # would otherwise weigh on it (the dd figure alternated 280-1200 MiB/s between repetitions).
  sync
  t0=$(secs); dd if="$file" of="$run/copy" bs=8M conv=fdatasync status=none; t1=$(secs)
  rm -f "$run/copy"; sync
  # The same past the page cache (O_DIRECT): what the disk itself takes.
  t8=$(secs); dd if="$file" of="$run/copy" bs=8M oflag=direct conv=fdatasync status=none; t9=$(secs)
  rm -f "$run/copy"
  t2=$(secs); dd if="$file" of=/dev/null bs=8M status=none; t3=$(secs)
  t4=0; t5=0
  if [ "${COLD:-0}" = 1 ]; then
    drop_caches; t4=$(secs); dd if="$file" of=/dev/null bs=8M status=none; t5=$(secs)
  fi
  HOME="$run" "$bin" server --port 0 --data-dir "$run/data" > "$run/out" 2> "$run/err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$run/out" ] && break; sleep 0.1; done
  cli() { HOME="$run" /usr/bin/time -f "%e %M" -o "$run/time" "$bin" "$@"; }
  sync
  cli artifact put "$file" --name big --type model -p bench > /dev/null 2> "$run/put.err"
  read -r put_s put_kb < "$run/time"
  cli artifact put "$file" --name big --type model -p bench > /dev/null 2> "$run/reput.err"
  read -r reput_s _ < "$run/time"
  reput_sent="$(grep -o '([^)]* sent)' "$run/reput.err" | tail -1)"
  if [ "${COLD:-0}" = 1 ]; then drop_caches; else sync; fi
  cli artifact get bench/big --root "$run/dl" > /dev/null 2> "$run/get.err"
  read -r get_s get_kb < "$run/time"
  cmp -s "$file" "$run/dl/weights.bin" || { echo "downloaded bytes differ" >&2; exit 1; }
  server_mb=$(awk '/VmHWM/ {print int($2 / 1024)}' /proc/$pid/status)
  kill $pid; wait $pid 2>/dev/null || true; pid=""
  python3 - "$size_mb" "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$put_s" "$put_kb" "$reput_s" "$get_s" "$get_kb" \
      "$server_mb" "$reput_sent" "$t8" "$t9" >> "$results" <<'PY'
import json, sys
mb = float(sys.argv[1]); t0, t1, t2, t3, t4, t5 = map(float, sys.argv[2:8])
t8, t9 = map(float, sys.argv[15:17])
put_s, put_kb, reput_s, get_s, get_kb, server_mb = map(float, sys.argv[8:14])
print(json.dumps({"disk_write_mbs": mb / (t1 - t0), "disk_read_mbs": mb / (t3 - t2),
                  "disk_write_direct_mbs": mb / (t9 - t8),
                  "put_mbs": mb / put_s, "put_s": put_s, "reput_s": reput_s,
                  "get_mbs": mb / get_s, "get_s": get_s, "cli_put_rss_mb": put_kb / 1024,
                  "cli_get_rss_mb": get_kb / 1024, "server_peak_rss_mb": server_mb,
                  "reput_sent": sys.argv[14],
                  "disk_read_cold_mbs": mb / (t5 - t4) if t5 > t4 else 0}))
PY
  rm -rf "$run"
  echo "repetition $rep done" >&2
done
python3 - "$results" "$size_mb" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k: st.median(r[k] for r in rows)
print(f"| measurement ({sys.argv[2]} MiB, median of {len(rows)}) | value |")
print("| --- | --- |")
print(f"| disk write, dd with fdatasync | {med('disk_write_mbs'):.0f} MiB/s |")
print(f"| disk write, dd oflag=direct with fdatasync (past the page cache) | {med('disk_write_direct_mbs'):.0f} MiB/s |")
print(f"| disk read, dd (page cache as it is) | {med('disk_read_mbs'):.0f} MiB/s |")
print(f"| `cohort artifact put` (hash, parts, verify, publish) | {med('put_mbs'):.0f} MiB/s ({med('put_s'):.1f} s), {100 * med('put_mbs') / med('disk_write_mbs'):.0f}% of disk write, {100 * med('put_mbs') / med('disk_write_direct_mbs'):.0f}% of direct |")
print(f"| put again, unchanged | {med('reput_s'):.2f} s, {rows[-1]['reput_sent']} |")
cold = med('disk_read_cold_mbs')
if cold:
    print(f"| disk read, dd after dropping the caches | {cold:.0f} MiB/s |")
    print(f"| `cohort artifact get` (ranged, verified; the blob read from the disk) | {med('get_mbs'):.0f} MiB/s ({med('get_s'):.1f} s), {100 * med('get_mbs') / cold:.0f}% of disk read, {100 * med('get_mbs') / med('disk_write_mbs'):.0f}% of disk write |")
else:
    print(f"| `cohort artifact get` (ranged, verified) | {med('get_mbs'):.0f} MiB/s ({med('get_s'):.1f} s), {100 * med('get_mbs') / med('disk_write_mbs'):.0f}% of disk write |")
print(f"| peak RSS: server / put / get | {med('server_peak_rss_mb'):.0f} / {med('cli_put_rss_mb'):.0f} / {med('cli_get_rss_mb'):.0f} MiB |")
PY
