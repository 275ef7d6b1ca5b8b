#!/usr/bin/env python3
"""System metrics read as JSON and as columns (issue 21; docs/formats.md "History columns",
docs/benchmarks.md "Issue 21: columnar reads"), on the SQLite store, printed as one JSON object.

    COHORT_BUILD_DIR=build python3 bench/system_read_bench.py [--samples 100000] [--repeat 10]

A fresh `cohort server` (bench/_bench_server.py's Server), one run whose writer rank_0 sends
--samples system rows of 4 metrics (cpu, memory, gpu.0.gpu, gpu.0.temp), then medians of:
  - raw_{json_parse,columns_decode}_ms: `GET .../system?limit=N` (every sample of the 4
    metrics, one request) + json.loads, against the same read with
    `Accept: application/vnd.cohort.columns` decoded with numpy (cohort.api_columns);
    server_cpu_ms_{json,columns}: the server's CPU time per read (/proc); bytes_per_point_*;
  - system_metrics_{json,columns}_ms: `cohort.Api().run(path).system_metrics()` into a pandas
    DataFrame (JSON forced with COHORT_API_COLUMNS=0); the two frames are checked equal;
  - load_avg_before/after: the 1-minute load average (the machine may be shared).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
from _bench_server import BUILD, Server, frames_by_format, raw_read  # noqa: E402

KEYS = ("cpu", "memory", "gpu.0.gpu", "gpu.0.temp")


def write_run(server, entity, samples):
    run = server.json("POST", f"/api/v1/runs/{entity}/bench", {"name": "system"})["id"]
    path = f"/api/v1/runs/{entity}/bench/{run}"
    server.json("POST", path + "/writers", {"label": "rank_0"})
    rows = 10_000
    for seq, start in enumerate(range(0, samples, rows), 1):
        system = [{"time": 1_700_000_000_000 + 1000 * i,
                   "values": {"cpu": (i * 7) % 100 + 0.5, "memory": 1000.0 + i * 0.01,
                              "gpu.0.gpu": float(i % 101), "gpu.0.temp": 40.0 + i % 40}}
                  for i in range(start, min(samples, start + rows))]
        server.json("POST", path + "/writers/rank_0/batches", {"seq": seq, "system": system})
    return run, path


def measure(server, samples, repeat):
    import cohort
    from cohort import api_columns

    entity = server.json("GET", "/api/v1/viewer")["entity"]
    run, path = write_run(server, entity, samples)
    raw = f"{path}/system?limit={samples}"
    points = samples * len(KEYS)
    out = {"load_avg_before": os.getloadavg()[0], "points": points}
    def check(accept):
        def count(body):
            n = len(json.loads(body)["series"][0]["points"]) if accept is None else \
                len(api_columns.decode(body)[1][0].steps)
            if n != samples:
                raise RuntimeError(f"{accept or 'JSON'}: {n} samples, expected {samples}")
        return count

    for mode, accept, name in (("json", None, "raw_json_parse_ms"),
                               ("columns", api_columns.MEDIA_TYPE, "raw_columns_decode_ms")):
        r = raw_read(server, raw, repeat, accept=accept, check=check(accept))
        out[name] = r["ms"]
        out[f"server_cpu_ms_{mode}"] = r["server_cpu_ms"]
        out[f"bytes_per_point_{mode}"] = r["bytes"] / points
    api = cohort.Api(base_url=server.url, api_key=server.key)
    try:
        r = api.run(f"{entity}/bench/{run}")
        ms, df = frames_by_format(r.system_metrics, max(3, repeat // 2))
        if len(df) != samples:
            raise RuntimeError(f"system_metrics: {len(df)} rows, expected {samples}")
        out["system_metrics_json_ms"] = ms["json"]
        out["system_metrics_columns_ms"] = ms["columns"]
    finally:
        api.close()
    out["load_avg_after"] = os.getloadavg()[0]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    out = {"samples": args.samples, "metrics": len(KEYS), "repeat": args.repeat,
           "cpus": os.cpu_count(), "build": str(BUILD)}
    work = pathlib.Path(tempfile.mkdtemp(prefix="cohort-sysread-"))
    server = None
    try:
        server = Server(work)
        out["sqlite"] = measure(server, args.samples, args.repeat)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
