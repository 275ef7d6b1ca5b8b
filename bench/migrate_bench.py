#!/usr/bin/env python3
"""Copy rate of `cohort migrate | export | import` (docs/benchmarks.md "Store migration"), printed
as one JSON object.

    COHORT_BUILD_DIR=build python3 bench/migrate_bench.py [--runs 4 --steps 50000 --repeats 3]

Fills a SQLite store through a real `cohort server` (N runs x 10 keys x S steps in batches of
1,000 rows, a console line per batch), stops it, then times per repetition, each into a fresh
PostgreSQL database of a throwaway cluster (tests/postgres/pg_cluster.py) or a fresh file:
  - `export`: SQLite -> dump file (the read side alone: the baseline of the copies below),
  - `migrate_pg`: SQLite -> PostgreSQL straight,
  - `import_pg`: dump file -> PostgreSQL,
  - `migrate_sqlite`: SQLite -> a new SQLite file.
Reports medians of wall seconds, rows/s and points/s (rows: all table rows the dump holds).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build")).resolve()
COHORT = BUILD / "src" / "cli" / "cohort"
sys.path.insert(0, str(ROOT / "tests" / "postgres"))
from pg_cluster import PgCluster  # noqa: E402


def post(url, key, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + key,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read() or b"null")


def fill(work, runs, steps):
    home = work / "home"
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
    db = work / "src.db"
    proc = subprocess.Popen([str(COHORT), "server", "--port", "0", "--data-dir",
                             str(work / "data"), "--store", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    url = proc.stdout.readline().strip()
    key = json.loads((home / ".config" / "cohort" / "config.json").read_text())["api_key"]
    req = urllib.request.Request(url + "/api/v1/viewer", headers={"Authorization": "Bearer " + key})
    entity = json.loads(urllib.request.urlopen(req).read())["entity"]
    for r in range(runs):
        run = post(f"{url}/api/v1/runs/{entity}/bench", key, {"name": f"run{r}"})
        path = f"{url}/api/v1/runs/{entity}/bench/{run['id']}"
        post(path + "/writers", key, {"label": "main"})
        for seq, start in enumerate(range(0, steps, 1000), 1):
            rows = [{"step": s, "time": 1_700_000_000_000 + s,
                     "values": {f"k{k}": 1.0 / (1 + s * 0.001) + k for k in range(10)}}
                    for s in range(start, min(steps, start + 1000))]
            post(path + "/writers/main/batches", key,
                 {"seq": seq, "history": rows,
                  "console": [{"time": 1, "stream": "stdout", "text": f"batch {seq}"}]})
    proc.terminate()
    proc.wait(timeout=30)
    return db


def timed(*args):
    t0 = time.perf_counter()
    proc = subprocess.run([str(COHORT), *args, "--progress", "never"], capture_output=True,
                          text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{args[0]} failed: {proc.stderr}")
    return dt, proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=50000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="cohort-migrate-bench-"))
    results = {k: [] for k in ("export", "migrate_pg", "import_pg", "migrate_sqlite")}
    rows = 0
    try:
        src = fill(work, args.runs, args.steps)
        with PgCluster() as pg:
            for i in range(args.repeats):
                dump = work / f"d{i}.cdump"
                dt, err = timed("export", "--store", str(src), "--out", str(dump))
                rows = int(re.search(r"exported (\d+) rows", err).group(1))
                results["export"].append(dt)
                pg.create_database(f"m{i}")
                results["migrate_pg"].append(
                    timed("migrate", "--from", str(src), "--to", pg.url(f"m{i}"))[0])
                pg.create_database(f"i{i}")
                results["import_pg"].append(
                    timed("import", "--store", pg.url(f"i{i}"), "--in", str(dump))[0])
                results["migrate_sqlite"].append(
                    timed("migrate", "--from", str(src), "--to", str(work / f"c{i}.db"))[0])
                dump.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    points = args.runs * args.steps * 10
    out = {"workload": vars(args), "points": points, "rows": rows, "median": {}}
    for name, times in results.items():
        t = statistics.median(times)
        out["median"][name] = {"seconds": t, "rows_per_s": rows / t, "points_per_s": points / t}
    out["runs"] = results
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
