"""Bytes per point of a store holding the metrics corpus (bench/README.md, issue 22).

Starts `cohort server` (SQLite, port 0, a temporary data directory), replays the corpus through
the JSON ingest API the way the agent uploads a run (each writer's rows in time order, one batch
per second of logging time, history and system rows together, each batch marked
`Cohort-Batch-Ordered: <stream id>` as the agent marks it; --unordered: without it, as other
JSON clients send them, each batch leaving its exactly-once record), stops the server cleanly
(SIGTERM) and reports the data directory's size, the chunk bytes, and SQLite's own accounting
of every table and index (dbstat) per point.

    .venv/bin/python bench/corpus/store_size.py [--bin build/src/cli/cohort] [--corpus FILE]
                                                [--keep DIR] [--window-ms 1000] [--postgres]
                                                [--pg-set NAME=VALUE ...] [--unordered]
                                                [--no-auto-vacuum]

With --postgres the server stores into a throwaway PostgreSQL cluster
(tests/postgres/pg_cluster.py) instead, and the report is PostgreSQL's: the relations' sizes as
the job left them (autovacuum as configured: the steady state a live server sees), their live
and dead tuples, and the sizes again after VACUUM. --pg-set name=value (repeatable) sets a
server setting of that cluster: the replay runs an hour of logging in well under a minute, so
autovacuum's one-minute naptime never comes round during it; --pg-set autovacuum_naptime=1s
gives autovacuum the turns per batch it has when the job logs in real time.

The SQLite report also gives the database's pages while the server still runs (the job's steady
state: free pages are reused by later writes) before the clean stop, which gives free pages (up
to 64 MB) back to the file system (auto_vacuum=INCREMENTAL, docs/operations.md "Disk space").
--no-auto-vacuum makes the database files beforehand without auto_vacuum (as a file made before
the store set it: no pointer-map pages, free pages kept), to measure the same binary both ways.
"""
import argparse
import collections
import json
import math
import os
import pathlib
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent


def read_corpus(path):
    raw = subprocess.run(["zstd", "-dc", str(path)], check=True, capture_output=True).stdout
    if raw[:8] != b"CCORPUS1":
        sys.exit(f"store_size: {path} is not a corpus")
    pos = 8
    (count,) = struct.unpack_from("<I", raw, pos)
    pos += 4

    def s16():
        nonlocal pos
        (n,) = struct.unpack_from("<H", raw, pos)
        pos += 2 + n
        return raw[pos - n:pos].decode()

    series = []
    for _ in range(count):
        run, writer = s16(), s16()
        system = raw[pos] == 1
        pos += 1
        key = s16()
        (n,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        steps = struct.unpack_from(f"<{n}q", raw, pos)
        times = struct.unpack_from(f"<{n}q", raw, pos + 8 * n)
        values = struct.unpack_from(f"<{n}d", raw, pos + 16 * n)
        pos += 24 * n
        series.append((run, writer, system, key, steps, times, values))
    return series


def json_value(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


class Api:
    def __init__(self, url, key):
        self.url, self.key = url, key

    def post(self, path, body, headers=None):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     method="POST",
                                     headers={"Authorization": f"Bearer {self.key}",
                                              "Content-Type": "application/json",
                                              **(headers or {})})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())


def replay(api, entity, series, window_ms, ordered=True):
    """Each (run, writer): its history rows keyed by (step, time), system rows by time, in time
    order, one batch per window of window_ms."""
    marks = {"Cohort-Batch-Ordered": "store-size"} if ordered else {}
    writers = collections.defaultdict(list)
    for s in series:
        writers[(s[0], s[1])].append(s)
    batches = 0
    for (run, writer), members in writers.items():
        api.post(f"/api/v1/runs/{entity}/corpus", {"id": run, "name": run})
        api.post(f"/api/v1/runs/{entity}/corpus/{run}/writers", {"label": writer})
        rows = {}  # (time, system, step) -> rows of values (a point repeated: a second row)
        for _, _, system, key, steps, times, values in members:
            for st, t, v in zip(steps, times, values):
                same = rows.setdefault((t, int(system), st if not system else 0), [{}])
                if key in same[-1]:
                    same.append({})
                same[-1][key] = json_value(v)
        seq = 0
        current, body = None, None
        for (t, system, st), vals in ((k, r) for k, rs in sorted(rows.items()) for r in rs):
            if t // window_ms != current:
                if body:
                    seq += 1
                    body["seq"] = seq
                    api.post(f"/api/v1/runs/{entity}/corpus/{run}/writers/{writer}/batches", body,
                             marks)
                current, body = t // window_ms, {"history": [], "system": []}
            if system:
                body["system"].append({"time": t, "values": vals})
            else:
                body["history"].append({"step": st, "time": t, "values": vals})
        if body:
            seq += 1
            body["seq"] = seq
            api.post(f"/api/v1/runs/{entity}/corpus/{run}/writers/{writer}/batches", body,
                     marks)
        api.post(f"/api/v1/runs/{entity}/corpus/{run}/writers/{writer}/finish", {"exit_code": 0})
        batches += seq
    return batches


PG_SIZES = """SELECT c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid),
  coalesce(pg_total_relation_size(c.reltoastrelid), 0), coalesce(s.n_live_tup, 0),
  coalesce(s.n_dead_tup, 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 2 DESC"""


def pg_total(pg, database):
    rows = [r.split("|") for r in pg.psql(database, PG_SIZES).split("\n") if r.strip()]
    return sum(int(r[1]) for r in rows), rows


def pg_report(pg, points, label, empty=None):
    total, rows = pg_total(pg, "cohort")
    print(f"PostgreSQL, {label}: all tables with indexes and TOAST {total} bytes = "
          f"{total / points:.3f} B/point")
    if empty is not None:
        print(f"  of which an empty store {empty} bytes = {empty / points:.3f} B/point; the "
              f"corpus's own {(total - empty) / points:.3f} B/point")
    for name, tot, heap, toast, live, dead in rows[:6]:
        print(f"  {name:18s} {int(tot) / points:7.3f} B/point (heap {int(heap) / points:.3f}, "
              f"TOAST {int(toast) / points:.3f}; {live} live, {dead} dead rows)")


def make_without_auto_vacuum(data_dir):
    """A database file the store will open as one made before it set auto_vacuum: a table made
    (and dropped) fixes the file's auto_vacuum at none."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(data_dir / "cohort.db")
    db.execute("CREATE TABLE made_before (x)")
    db.execute("DROP TABLE made_before")
    db.commit()
    db.close()
    (data_dir / "cohort.db").chmod(0o600)  # as the store makes it


def start_and_stop(argv, env):
    """A server started and stopped cleanly (with nothing logged): what an empty store is."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            text=True)
    try:
        proc.stdout.readline()  # its URL: it is serving
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=str(pathlib.Path(os.environ.get("COHORT_BUILD_DIR",
                                                                     ROOT / "build"))
                                        / "src" / "cli" / "cohort"))
    p.add_argument("--corpus", default=str(HERE / "training.corpus.zst"))
    p.add_argument("--window-ms", type=int, default=1000)
    p.add_argument("--keep", default="", help="leave the server's HOME here")
    p.add_argument("--postgres", action="store_true", help="a PostgreSQL store (see above)")
    p.add_argument("--pg-set", action="append", default=[], metavar="NAME=VALUE",
                   help="a setting of the throwaway PostgreSQL cluster (see above)")
    p.add_argument("--unordered", action="store_true",
                   help="batches without Cohort-Batch-Ordered (a record each; see above)")
    p.add_argument("--no-auto-vacuum", action="store_true",
                   help="SQLite files made beforehand without auto_vacuum (see above)")
    a = p.parse_args()
    pg = None
    if a.postgres:
        sys.path.insert(0, str(ROOT / "tests" / "postgres"))
        from pg_cluster import PgCluster
        settings = dict(kv.split("=", 1) for kv in a.pg_set)
        pg = PgCluster(durable=True, settings=settings).__enter__()
        pg.create_database("cohort")
        pg.create_database("empty")
    series = read_corpus(a.corpus)
    points = sum(len(s[4]) for s in series)
    with tempfile.TemporaryDirectory(prefix="cohort-store-size-") as tmp:
        home = pathlib.Path(a.keep or tmp)
        home.mkdir(parents=True, exist_ok=True)
        data = home / "data"
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        # The same server on an empty store first (its own HOME, data directory or database):
        # the fixed cost that the corpus's points are measured beside.
        (home / "empty").mkdir()
        empty_argv = [a.bin, "server", "--port", "0", "--data-dir", str(home / "empty" / "data")]
        if pg:
            empty_argv += ["--store", pg.url("empty")]
        elif a.no_auto_vacuum:
            make_without_auto_vacuum(home / "empty" / "data")
            make_without_auto_vacuum(data)
        start_and_stop(empty_argv, dict(env, HOME=str(home / "empty")))
        if pg:
            pg.psql("empty", "VACUUM")
            empty = pg_total(pg, "empty")[0]
        else:
            empty = sum(f.stat().st_size for f in (home / "empty" / "data").iterdir()
                        if f.is_file())
        argv = [a.bin, "server", "--port", "0", "--data-dir", str(data)]
        if pg:
            argv += ["--store", pg.url("cohort")]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                text=True)
        try:
            url = proc.stdout.readline().strip()
            key = json.loads((home / ".config/cohort/config.json").read_text())["api_key"]
            api = Api(url, key)
            req = urllib.request.Request(url + "/api/v1/viewer",
                                         headers={"Authorization": f"Bearer {key}"})
            entity = json.loads(urllib.request.urlopen(req).read())["entity"]
            t0 = time.time()
            batches = replay(api, entity, series, a.window_ms, ordered=not a.unordered)
            took = time.time() - t0
            if not pg:  # the committed pages as the running server has them (WAL included)
                db = sqlite3.connect(f"file:{data / 'cohort.db'}?mode=ro", uri=True)
                running = [db.execute(f"PRAGMA {n}").fetchone()[0]
                           for n in ("page_count", "freelist_count", "page_size")]
                db.close()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        if pg:
            print(f"store_size: {a.bin}: {points} points in {len(series)} series, {batches} "
                  f"batches ({took:.1f} s)")
            stored = pg.psql("cohort", "SELECT sum(count), sum(length(data)), count(*) "
                                       "FROM chunks").strip().split("|")
            print(f"chunk blobs: {stored[1]} bytes = {int(stored[1]) / points:.3f} B/point in "
                  f"{stored[2]} chunks ({points / int(stored[2]):.0f} points/chunk); "
                  f"{stored[0]} points stored")
            pg_report(pg, points, "as the job left them", empty)
            pg.psql("cohort", "VACUUM")
            pg_report(pg, points, "after VACUUM", empty)
            pg.__exit__(None, None, None)
            return
        files = {f.name: f.stat().st_size for f in data.iterdir() if f.is_file()}
        total = sum(files.values())
        db = sqlite3.connect(f"file:{data / 'cohort.db'}?mode=ro", uri=True)
        stored = db.execute("SELECT sum(count), sum(length(data)), count(*) FROM chunks").fetchone()
        page = db.execute("PRAGMA page_size").fetchone()[0]
        free_pages = db.execute("PRAGMA freelist_count").fetchone()[0]
        objects = db.execute("SELECT name, sum(pgsize), sum(payload), sum(unused), count(*) "
                             "FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        db.close()
    print(f"store_size: {a.bin}: {points} points in {len(series)} series, {batches} batches "
          f"({took:.1f} s)")
    if stored[0] != points:
        sys.exit(f"store_size: the store holds {stored[0]} points, the corpus {points}")
    print(f"data directory after a clean stop: {total} bytes = {total / points:.3f} B/point "
          f"({', '.join(f'{n} {s}' for n, s in sorted(files.items()))})")
    print(f"  of which an empty store (a server started and stopped, nothing logged) {empty} "
          f"bytes = {empty / points:.3f} B/point; the corpus's own "
          f"{(total - empty) / points:.3f} B/point")
    print(f"before the stop (the server running): {running[0]} pages = "
          f"{running[0] * running[2] / points:.3f} B/point, of which {running[1]} free "
          f"({running[1] * running[2] / points:.3f} B/point)")
    print(f"chunk blobs: {stored[1]} bytes = {stored[1] / points:.3f} B/point in {stored[2]} "
          f"chunks ({points / stored[2]:.0f} points/chunk)")
    print(f"free pages after the stop: {free_pages} = "
          f"{free_pages * page / points:.3f} B/point")
    print(f"page size {page}; by table/index (dbstat): pages B/point, payload B/point, unused")
    for name, size, payload, unused, pages in objects:
        print(f"  {name:28s} {pages:6d} pages {size / points:7.3f} {payload / points:7.3f} "
              f"{unused / points:7.3f}")


if __name__ == "__main__":
    main()
