#!/usr/bin/env python3
"""Export of a run of --steps x --keys points (default 100,000 x 10 = 1M) to a file: the
`cohort runs export` binary (csv, jsonl, parquet with zstd and uncompressed pages; history read
as columns) against `python -m cohort export` (csv, parquet through pyarrow), printed as one JSON
object.

    BUILD_DIR=build python bench/export_bench.py [--steps 100000] [--keys 10] [--repeat 3]

A fresh `cohort server` (SQLite, bench/_bench_server.py), one run logged by the real SDK (one
writer; key k<i> at step s = sin(s * (i + 1) / 1000) * (i + 1), key k0 NaN every 1,000 steps),
then each export --repeat times. Per export: wall_s (median), cpu_s (median user+sys of the
exporting process, the figure to quote on a shared machine), server_cpu_s (median user+sys of
the server meanwhile: the history pages it answers), max_rss_mib (the exporting process's peak
resident memory, the largest of the repeats) and bytes of the file. The files are
checked: the parquet ones read back with pyarrow equal the csv's rows (values bit for bit).
--baseline-bin: a `cohort` binary from before the columnar reads (the JSON history pages), its
csv export timed as baseline_cli_csv. load_avg: the 1-minute load before and after.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pathlib
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _bench_server import COHORT, BenchServer  # noqa: E402

LOG = '''
import math, sys, cohort
steps, keys = int(sys.argv[1]), int(sys.argv[2])
run = cohort.init(project="bench", id="export1", settings=cohort.Settings(x_stats_sampling_interval=0))
for s in range(steps):
    row = {f"k{i}": math.sin(s * (i + 1) / 1000) * (i + 1) for i in range(keys)}
    if s % 1000 == 0:
        row["k0"] = float("nan")
    run.log(row, step=s)
run.finish()
'''


def proc_cpu_s(pid):
    """utime + stime of process `pid` in seconds (/proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd, env, server_pid):
    """Runs cmd; (wall s, user+sys s of the child, user+sys s of the server meanwhile, the
    child's peak RSS in MiB)."""
    server_before = proc_cpu_s(server_pid)
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(" ".join(map(str, cmd)) + ": " + err.read()[-2000:].decode())
    return (wall, ru.ru_utime + ru.ru_stime, proc_cpu_s(server_pid) - server_before,
            ru.ru_maxrss / 1024)


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def check_parquet(path, csv_path, keys):
    import pyarrow.parquet as pq
    t = pq.read_table(path)
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert t.num_rows == len(rows), (t.num_rows, len(rows))
    steps = t.column("step").to_pylist()
    assert steps == [int(r["step"]) for r in rows]
    for i in range(keys):
        got = t.column(f"k{i}").to_pylist()
        for g, r in zip(got, rows):
            want = float(r[f"k{i}"])
            assert (math.isnan(g) and math.isnan(want)) or bits(g) == bits(want), (g, want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-bin", help="another `cohort` binary (one whose export reads the "
                    "history as JSON): its csv export is timed too, as baseline_cli_csv")
    args = ap.parse_args()
    out = {"steps": args.steps, "keys": args.keys, "points": args.steps * args.keys,
           "load_avg_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp, BenchServer(tmp) as srv:
        t0 = time.perf_counter()
        srv.run_script(LOG, args.steps, args.keys)
        total = args.steps * args.keys
        while True:
            keys = srv.get("/api/v1/runs/" + _entity(srv) + "/bench/export1/keys")["keys"]
            if sum(k["count"] for k in keys if not k["key"].startswith("system/")) == total:
                break
            time.sleep(0.5)
        out["log_s"] = round(time.perf_counter() - t0, 1)
        env = dict(srv.env, COHORT_BASE_URL=srv.url, COHORT_API_KEY=srv.api_key())
        run = "bench/export1"
        cases = {
            "cli_csv": [str(COHORT), "runs", "export", run, "-f", "csv"],
            "cli_jsonl": [str(COHORT), "runs", "export", run, "-f", "jsonl"],
            "cli_parquet_zstd": [str(COHORT), "runs", "export", run, "-f", "parquet"],
            "cli_parquet_none": [str(COHORT), "runs", "export", run, "-f", "parquet",
                                 "--compression", "none"],
            "python_csv": [sys.executable, "-m", "cohort", "export", run, "-f", "csv"],
            "python_parquet": [sys.executable, "-m", "cohort", "export", run, "-f", "parquet"],
        }
        if args.baseline_bin:
            cases["baseline_cli_csv"] = [args.baseline_bin, "runs", "export", run, "-f", "csv"]
        results = {}
        for name, cmd in cases.items():
            ext = "parquet" if "parquet" in name else cmd[cmd.index("-f") + 1]
            path = pathlib.Path(tmp) / f"{name}.{ext}"
            walls, cpus, server, rss = [], [], [], []
            for _ in range(args.repeat):
                w, c, sc, m = timed(cmd + ["-o", str(path), "--progress", "never"], env,
                                    srv.proc.pid)
                walls.append(w)
                cpus.append(c)
                server.append(sc)
                rss.append(m)
            results[name] = {"wall_s": round(statistics.median(walls), 2),
                             "cpu_s": round(statistics.median(cpus), 2),
                             "server_cpu_s": round(statistics.median(server), 2),
                             "max_rss_mib": round(max(rss), 1),
                             "bytes": path.stat().st_size}
        base = pathlib.Path(tmp)
        for name in ("cli_parquet_zstd", "cli_parquet_none", "python_parquet"):
            check_parquet(base / f"{name}.parquet", base / "cli_csv.csv", args.keys)
        out["exports"] = results
    out["load_avg_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


def _entity(srv):
    return srv.get("/api/v1/viewer")["entity"]


if __name__ == "__main__":
    main()
