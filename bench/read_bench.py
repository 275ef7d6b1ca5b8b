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
"""
from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build"))
sys.path.insert(0, str(ROOT / "tests" / "postgres"))
from pg_cluster import PgCluster  # noqa: E402


def cpu_ms(pids):
    """utime + stime of the processes in ms (ones that are gone count 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def cluster_pids(pg):
    """The postmaster of `pg` and its children (the backends serving the server)."""
    if pg is None:
        return []
    with open(os.path.join(pg.dir, "data", "postmaster.pid")) as f:
        master = int(f.readline())
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    return [master] + [int(p) for p in out.split()]


class Server:
    """A `cohort server` on a fresh store; one keep-alive connection to it."""

    def __init__(self, workdir, store_url=None):
        home = workdir / "home"
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        store = ["--store", store_url] if store_url else []
        self.proc = subprocess.Popen(
            [str(BUILD / "src" / "cli" / "cohort"), "server", "--port", "0", "--data-dir",
             str(workdir / "data"), *store], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env, text=True)
        url = self.proc.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError("cohort server did not start")
        parsed = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
        key = json.loads((home / ".config" / "cohort" / "config.json").read_text())["api_key"]
        self.headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        """Returns (status, raw answer bytes)."""
        self.conn.request(method, path, json.dumps(body) if body is not None else None,
                          self.headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()

    def json(self, method, path, body=None):
        status, data = self.call(method, path, body)
        if status not in (200, 201):
            raise RuntimeError(f"{method} {path}: {status} {data[:200]!r}")
        return json.loads(data)

    def stop(self):
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def measure(server, points, repeat, pg=None):
    entity = server.json("GET", "/api/v1/viewer")["entity"]
    run = server.json("POST", f"/api/v1/runs/{entity}/bench", {"name": "read"})["id"]
    path = f"/api/v1/runs/{entity}/bench/{run}"
    server.json("POST", path + "/writers", {"label": "rank_0"})
    rows = 10_000
    for seq, start in enumerate(range(0, points, rows), 1):
        history = [{"step": s, "time": 1_700_000_000_000 + s,
                    "values": {"m0": 1.0 / (1.0 + 0.001 * s) + 0.01 * math.sin(s * 0.7)}}
                   for s in range(start, min(points, start + rows))]
        server.json("POST", path + "/writers/rank_0/batches", {"seq": seq, "history": history})
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
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--stores", default="sqlite,postgres")
    args = ap.parse_args()
    out = {"points": args.points, "repeat": args.repeat}
    for store in args.stores.split(","):
        work = pathlib.Path(tempfile.mkdtemp(prefix="cohort-read-"))
        pg = PgCluster().start() if store == "postgres" else None
        server = None
        try:
            if pg is not None:
                pg.create_database("cohort")
            server = Server(work, pg.url("cohort") if pg else None)
            out[store] = measure(server, args.points, args.repeat, pg)
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
