#!/usr/bin/env python3
"""Raw read of one key through HTTP (DESIGN.md section 4: "read one key's 100k points (raw)
<= 20 ms"), on the SQLite store and on PostgreSQL, printed as one JSON object.

    COHORT_BUILD_DIR=build python3 bench/read_bench.py [--points 100000] [--repeat 30]

Per store: a fresh `cohort server` (SQLite in a temporary data directory; PostgreSQL on a
throwaway cluster, tests/postgres/pg_cluster.py), one run whose writer logs key m0 (a noisy
decreasing curve, explicit steps) in batches of 10,000 rows, then --repeat reads of
`GET .../history?keys=m0&limit=N` (exact, every point, one request) over one keep-alive
connection. Reported medians:
  - read_ms: request sent to the last byte of the answer received (the server's work: store
    read, JSON text, sending; the client only copies bytes);
  - read_parse_ms: the same plus parsing the answer with Python's json (what a client adds);
  - server_cpu_ms (and, on PostgreSQL, db_cpu_ms: the cluster's processes) per raw read: CPU
    time from /proc over the raw reads, the figure to quote on a loaded machine where wall
    time includes waiting for a core;
  - chart_ms: `buckets=1000` over the same key;
  - answer_bytes and bytes_per_point of the JSON answer.
The answer is checked: --points points in step order.

Issue 21 (columnar reads, docs/formats.md "History columns"), per store, `columns`:
  - raw_json_parse_ms / raw_columns_decode_ms: the same raw read with
    `Accept: application/vnd.cohort.columns`, decoded with numpy (cohort.api_columns), against
    the JSON read + json.loads above; per format, server_cpu_ms_{json,columns} (and on
    PostgreSQL db_cpu_ms_{json,columns}) per read and {json,columns}_bytes_per_point;
  - api_history_1key_{json,columns}_ms: `cohort.Api().run(path).history(keys=["m0"])` into a
    pandas DataFrame (JSON forced with COHORT_API_COLUMNS=0), --points points;
  - api_history_10keys_{json,columns}_ms: the same for a run of 10 keys x --points points;
  - api_history_runs_columns_ms: `Api.history(runs, keys=["m0"])` of --runs runs of --points
    points (the one-key run read --runs times, 8 threads), into one long DataFrame;
  - load_avg: the 1-minute load average before and after (the machine may be shared).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "postgres"))
sys.path.insert(0, str(ROOT / "bench"))
from _bench_server import (Server, cluster_pids, cpu_ms, frames_by_format,  # noqa: E402
                           raw_read, timed)
from pg_cluster import PgCluster  # noqa: E402


def write_run(server, entity, points, keys):
    """A new run of one writer logging `keys` (m0..) at every step 0..points-1; its API path."""
    run = server.json("POST", f"/api/v1/runs/{entity}/bench", {"name": "read"})["id"]
    path = f"/api/v1/runs/{entity}/bench/{run}"
    server.json("POST", path + "/writers", {"label": "rank_0"})
    rows = max(1000, 100_000 // keys)
    for seq, start in enumerate(range(0, points, rows), 1):
        history = [{"step": s, "time": 1_700_000_000_000 + s,
                    "values": {f"m{k}": 1.0 / (1.0 + 0.001 * s) + 0.01 * math.sin(s * 0.7 + k)
                               for k in range(keys)}}
                   for s in range(start, min(points, start + rows))]
        server.json("POST", path + "/writers/rank_0/batches", {"seq": seq, "history": history})
    return run, path


def measure_columns(server, entity, run, path, points, repeat, runs, pg=None):
    """The issue 21 figures (module docstring)."""
    import cohort
    from cohort import api_columns

    raw = f"{path}/history?keys=m0&limit={points}"

    def columns_check(body):
        series = api_columns.decode(body)[1]
        if len(series[0].steps) != points or series[0].more:
            raise RuntimeError(f"columns: {len(series[0].steps)} points, expected {points}")

    out = {"load_avg_before": os.getloadavg()[0]}
    for mode, accept, check, name in (
            ("json", None, json.loads, "raw_json_parse_ms"),
            ("columns", api_columns.MEDIA_TYPE, columns_check, "raw_columns_decode_ms")):
        r = raw_read(server, raw, repeat, accept=accept, check=check, pg=pg)
        out[name] = r["ms"]
        out[f"server_cpu_ms_{mode}"] = r["server_cpu_ms"]
        if "db_cpu_ms" in r:
            out[f"db_cpu_ms_{mode}"] = r["db_cpu_ms"]
        out[f"{mode}_bytes_per_point"] = r["bytes"] / points
    run10, _ = write_run(server, entity, points, 10)
    api = cohort.Api(base_url=server.url, api_key=server.key)
    try:
        for name, run_id, keys in (("1key", run, ["m0"]),
                                   ("10keys", run10, [f"m{k}" for k in range(10)])):
            r = api.run(f"{entity}/bench/{run_id}")
            ms, df = frames_by_format(lambda: r.history(keys=keys), max(3, repeat // 3))
            if len(df) != points:
                raise RuntimeError(f"history {name}: {len(df)} rows, expected {points}")
            out[f"api_history_{name}_json_ms"] = ms["json"]
            out[f"api_history_{name}_columns_ms"] = ms["columns"]
        if runs:
            paths = [f"{entity}/bench/{run}"] * runs
            ms, df = timed(lambda: api.history(paths, keys=["m0"]), 3)
            if len(df) != runs * points:
                raise RuntimeError(f"Api.history: {len(df)} rows")
            out["api_history_runs"] = runs
            out["api_history_runs_columns_ms"] = ms
    finally:
        api.close()
    out["load_avg_after"] = os.getloadavg()[0]
    return out


def measure(server, points, repeat, pg=None, runs=0):
    entity = server.json("GET", "/api/v1/viewer")["entity"]
    run, path = write_run(server, entity, points, 1)
    raw = f"{path}/history?keys=m0&limit={points}"
    chart = f"{path}/history?keys=m0&buckets=1000"
    read_ms, parse_ms, chart_ms, size = [], [], [], 0
    server.call("GET", raw)  # warm: the store's pages in memory, the connection's statements
    db = cluster_pids(pg)
    cpu0, db0 = cpu_ms([server.proc.pid]), cpu_ms(db)
    for _ in range(repeat):
        t = time.perf_counter()
        status, data = server.call("GET", raw)
        read_ms.append((time.perf_counter() - t) * 1e3)
        answer = json.loads(data)
        parse_ms.append((time.perf_counter() - t) * 1e3)
        if status != 200:
            raise RuntimeError(f"history: {status} {data[:200]!r}")
        pts = answer["series"][0]["points"]
        if len(pts) != points or answer["series"][0].get("more") or \
                any(pts[i][0] != i for i in (0, points // 2, points - 1)):
            raise RuntimeError(f"history: {len(pts)} points, expected {points}")
        size = len(data)
    cpu = (cpu_ms([server.proc.pid]) - cpu0) / repeat
    db_cpu = (cpu_ms(db) - db0) / repeat
    for _ in range(repeat):
        t = time.perf_counter()
        status, data = server.call("GET", chart)
        chart_ms.append((time.perf_counter() - t) * 1e3)
        if status != 200 or len(json.loads(data)["series"][0]["buckets"]) != 1000:
            raise RuntimeError(f"chart: {status} {data[:200]!r}")
    out = {"read_ms": statistics.median(read_ms),
           "read_ms_min": min(read_ms),
           "server_cpu_ms": cpu,
           "read_parse_ms": statistics.median(parse_ms),
           "chart_ms": statistics.median(chart_ms),
           "answer_bytes": size,
           "bytes_per_point": size / points}
    if pg is not None:
        out["db_cpu_ms"] = db_cpu
    out["columns"] = measure_columns(server, entity, run, path, points, repeat, runs, pg)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--runs", type=int, default=10,
                    help="runs of Api.history(runs, ...) (0: not measured)")
    args = ap.parse_args()
    out = {"points": args.points, "repeat": args.repeat, "cpus": os.cpu_count()}
    for store in args.stores.split(","):
        work = pathlib.Path(tempfile.mkdtemp(prefix="cohort-read-"))
        pg = PgCluster().start() if store == "postgres" else None
        server = None
        try:
            if pg is not None:
                pg.create_database("cohort")
            server = Server(work, pg.url("cohort") if pg else None)
            out[store] = measure(server, args.points, args.repeat, pg, args.runs)
        finally:
            if server is not None:
                server.stop()
            if pg is not None:
                pg.stop()
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
