#!/usr/bin/env python3
"""The runs listing of 10,000 runs sorted by a summary key (issue 17), against the same listing by
creation time, on a fresh `cohort server` (SQLite store), printed as one JSON object.

    BUILD_DIR=build python3 bench/run_sort_bench.py [--runs 10000] [--repeat 5]

Seeds --runs runs (8 threads, HTTP): config {lr, optimizer, layers}, summary {val_loss: a number
for most runs, "NaN" for 1 in 50, missing for 1 in 20; acc}. Then, per sort, the median over
--repeat of reading every run in pages of 1,000 (`all_pages_ms`, checked: every run once) and of
the first page alone (`first_page_ms`), over one keep-alive connection. Sorts: -created (what was
there before), summary.val_loss, -summary.val_loss, config.lr. load_avg: the 1-minute load
before and after (the machine may be shared).
"""
import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _bench_server import BenchServer  # noqa: E402

PROJECT = "sortbench"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    out = {"runs": args.runs, "load_avg_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp, BenchServer(tmp) as srv:
        key = srv.api_key()
        entity = srv.get("/api/v1/viewer")["entity"]
        base = f"/api/v1/runs/{entity}/{PROJECT}"
        host = urllib.parse.urlparse(srv.url).netloc
        headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}

        def summary(i):
            values = {"acc": (i % 101) / 100}
            if i % 20:
                values["val_loss"] = "NaN" if i % 50 == 1 else 1 / (1 + (i * 7919) % 10007)
            return values

        t0 = time.perf_counter()
        srv.seed_runs(PROJECT, args.runs, lambda i: {"lr": (i % 97) / 1000, "optimizer": "adam",
                                                     "layers": i % 7}, summary)
        out["seed_s"] = round(time.perf_counter() - t0, 1)

        conn = http.client.HTTPConnection(host)

        def page(sort, cursor):
            q = f"?sort={sort}&limit=1000" + (
                f"&cursor={urllib.parse.quote(cursor)}" if cursor else "")
            conn.request("GET", base + q, headers=headers)
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 200, body
            return body

        for sort in ("-created", "summary.val_loss", "-summary.val_loss", "config.lr"):
            alls, firsts = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                first = page(sort, None)
                firsts.append(time.perf_counter() - t0)
                ids = [r["id"] for r in first["runs"]]
                cursor = first["next_cursor"]
                while cursor:
                    body = page(sort, cursor)
                    ids += [r["id"] for r in body["runs"]]
                    cursor = body["next_cursor"]
                alls.append(time.perf_counter() - t0)
                assert len(ids) == args.runs == len(set(ids)), (sort, len(ids), len(set(ids)))
            name = sort.replace("-", "desc_").replace(".", "_")
            out[f"{name}_all_pages_ms"] = round(statistics.median(alls) * 1000, 1)
            out[f"{name}_first_page_ms"] = round(statistics.median(firsts) * 1000, 1)
        conn.close()
    out["load_avg_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
