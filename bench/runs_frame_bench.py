#!/usr/bin/env python3
"""A project's runs into one pandas DataFrame (issue 21): `cohort.Api().runs(path,
per_page=1000).to_dataframe()` from the listing's columnar pages (docs/formats.md "Run list
columns") against the same from its JSON pages, interleaved, on a fresh `cohort server` (SQLite).

    BUILD_DIR=build python3 bench/runs_frame_bench.py [RUNS (10000)]

Seeds RUNS runs over HTTP (8 threads): config of 10 numbers and a string, summary of 10
numbers. Prints, per mode and round (columns, json, columns, json), the median of 5 reads in ms
and the 1-minute load average.
"""
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
from _bench_server import BenchServer  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
PROJECT = "frames"


def main():
    with tempfile.TemporaryDirectory() as tmp, BenchServer(tmp) as srv:
        key = srv.api_key()
        entity = srv.get("/api/v1/viewer")["entity"]
        srv.seed_runs(PROJECT, N, lambda i: {f"c{j}": i * j / 7 for j in range(10)} | {"opt": "adam"},
                      lambda i: {f"s{j}": i / (j + 1) for j in range(10)})
        import cohort
        from cohort import api_columns
        api = cohort.Api(base_url=srv.url, api_key=key)
        columns_available = api_columns.available
        for mode in ("columns", "json", "columns", "json"):
            api_columns.available = columns_available if mode == "columns" else (lambda: False)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                df = api.runs(f"{entity}/{PROJECT}", per_page=1000).to_dataframe()
                times.append(time.perf_counter() - t0)
            assert len(df) == N, df.shape
            print(json.dumps({"mode": mode, "runs": N, "columns": df.shape[1],
                              "median_ms": round(statistics.median(times) * 1000, 1),
                              "load_avg": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
