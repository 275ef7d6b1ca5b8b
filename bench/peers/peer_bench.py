#!/usr/bin/env python3
"""Side by side with MLflow's tracking server (issue 5, docs/benchmarks.md "Side by side with
MLflow"), printed as one JSON object.

    COHORT_PEER_BENCH=1 COHORT_BUILD_DIR=build python3 bench/peers/peer_bench.py

Not part of the default test run: without COHORT_PEER_BENCH=1 it exits at once. It creates
.venv-peers (a separate virtualenv) and pip-installs MLflow from PyPI into it on first use.

The issue's workload against both, in one run, each through its own HTTP API from one Python
process (plain urllib for both, so that neither SDK's overhead counts):
  - a local `mlflow server` with a SQLite backend store (--workers 1), and
  - a local `cohort server` with its SQLite store;
--backend postgres puts both on a throwaway PostgreSQL cluster (tests/postgres/pg_cluster.py).
Per repetition, on fresh servers and stores:
  1. create --runs runs (timed; Cohort: create the run and join its writer, what `init` does);
  2. ingest K keys x S steps into the first run through each batch API, in calls of R steps x
     K metrics (MLflow's log-batch takes at most 1,000 metrics per call), by --clients
     concurrent clients, client c logging its own contiguous step range. MLflow: every client
     logs to the one run. Cohort: every client is a writer of the one shared run (labels
     rank_0..rank_{C-1}, what C training processes of one job are), so the key's points are
     stored as C series of one run;
  3. read one key's full history (all pages; Cohort: every writer's series of the key in one
     request) and a 1,000-point chart (Cohort: buckets=1000 // C per writer series, exact
     min/max per bucket; MLflow: get-history-bulk-interval with max_results=1000, the sampled
     read its UI charts use), each --reads times (median).
Reported per system (medians over the repetitions): run creation ms per run, ingest points/s
(all points / wall time of all log calls), log call latency (median call), history read and
chart latency, and disk bytes per point (the store's files after the server stopped, or the
growth of pg_database_size). `ratios` are Cohort / MLflow for rates, MLflow / Cohort for
latencies and bytes (> 1: Cohort better). MLflow at ~3k points/s needs ~5 minutes per 1M points,
so --mlflow-repeats may be set below --repeats.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
BUILD = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build"))
VENV = ROOT / ".venv-peers"
sys.path.insert(0, str(ROOT / "tests" / "postgres"))
from pg_cluster import PgCluster  # noqa: E402

# MLflow 2.22 fails to start with SQLAlchemy 2.1; psycopg2 for --backend postgres.
MLFLOW_REQ = ["mlflow>=2.10,<3", "sqlalchemy<2.1", "psycopg2-binary"]


def ensure_venv():
    """Creates .venv-peers and installs MLFLOW_REQ into it (idempotent: pip skips what is there)."""
    mlflow = VENV / "bin" / "mlflow"
    if not VENV.exists():
        print(f"peer_bench: creating {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    proc = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", *MLFLOW_REQ])
    if proc.returncode != 0 or not mlflow.exists():
        sys.exit(f"peer_bench: pip install {' '.join(MLFLOW_REQ)} failed (exit {proc.returncode})")
    return mlflow


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, url, body=None, headers=None, timeout=120):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def wait_http(url, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def dir_bytes(path):
    return sum(p.stat().st_size for p in pathlib.Path(path).rglob("*") if p.is_file())


def value(run, key, step):
    # A noisy decreasing training curve per key.
    return 1.0 / (1.0 + 0.01 * step) + 0.01 * math.sin(step * 0.7 + key * 1.3 + run)


class Mlflow:
    name = "mlflow"

    def __init__(self, mlflow_bin, workdir, pg=None):
        self.dir = workdir / "mlflow"
        self.dir.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.pg = pg
        uri = f"sqlite:///{self.dir}/mlflow.db"
        self.empty = 0
        if pg is not None:
            pg.create_database("mlflow")
            self.empty = int(pg.psql("mlflow", "SELECT pg_database_size('mlflow')"))
            uri = f"postgresql+psycopg2://postgres@/mlflow?host={pg.dir}&port={pg.port}"
        self.proc = subprocess.Popen(
            [str(mlflow_bin), "server", "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", "1", "--backend-store-uri", uri,
             "--default-artifact-root", str(self.dir / "artifacts")],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "server.log", "w"),
            start_new_session=True)  # its gunicorn children are stopped with it
        wait_http(self.url + "/health")
        self.exp = call("POST", self.url + "/api/2.0/mlflow/experiments/create",
                        {"name": "bench"})["experiment_id"]

    def create_run(self, i):
        r = call("POST", self.url + "/api/2.0/mlflow/runs/create",
                 {"experiment_id": self.exp, "run_name": f"run{i}", "start_time": 1})
        return r["run"]["info"]["run_id"]

    def join(self, run, clients):
        return [run] * clients  # every client logs to the run itself

    def log(self, run, rows, client=0):
        metrics = [{"key": f"m{k}", "value": v, "timestamp": t, "step": s}
                   for s, t, vals in rows for k, v in enumerate(vals)]
        call("POST", self.url + "/api/2.0/mlflow/runs/log-batch", {"run_id": run,
                                                                    "metrics": metrics})

    def history(self, run, key):
        points, token = 0, None
        while True:
            q = {"run_id": run, "metric_key": key, "max_results": 25000}
            if token:
                q["page_token"] = token
            r = call("GET", self.url + "/api/2.0/mlflow/metrics/get-history?" +
                     urllib.parse.urlencode(q))
            points += len(r.get("metrics", []))
            token = r.get("next_page_token")
            if not token:
                return points

    def chart(self, run, key, clients=1):
        # MLflow's sampled read (what its UI charts use): at most 1,000 points of the run.
        q = {"run_ids": run, "metric_key": key, "max_results": 1000}
        r = call("GET", self.url + "/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval?" +
                 urllib.parse.urlencode(q))
        return len(r.get("metrics", []))

    def stop(self):
        # `mlflow server` runs gunicorn as a child that outlives a plain terminate().
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)
        if self.pg is not None:
            # Growth over the empty database (the catalog alone is ~7.5 MB).
            return int(self.pg.psql("mlflow", "SELECT pg_database_size('mlflow')")) - self.empty
        return sum(p.stat().st_size for p in self.dir.glob("mlflow.db*"))


class Cohort:
    name = "cohort"

    def __init__(self, workdir, pg=None):
        self.dir = workdir / "cohort"
        self.dir.mkdir()
        self.pg = pg
        home = self.dir / "home"
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        store, self.empty = [], 0
        if pg is not None:
            pg.create_database("cohort")
            self.empty = int(pg.psql("cohort", "SELECT pg_database_size('cohort')"))
            store = ["--store", pg.url("cohort")]
        self.proc = subprocess.Popen(
            [str(BUILD / "src" / "cli" / "cohort"), "server", "--port", "0", "--data-dir",
             str(self.dir / "data"), *store], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError("cohort server did not start")
        key = json.loads((home / ".config" / "cohort" / "config.json").read_text())["api_key"]
        self.auth = {"Authorization": "Bearer " + key}
        self.entity = call("GET", self.url + "/api/v1/viewer", headers=self.auth)["entity"]
        self.seq = {}

    def create_run(self, i):
        base = f"{self.url}/api/v1/runs/{self.entity}/bench"
        r = call("POST", base, {"name": f"run{i}"}, headers=self.auth)
        path = f"{base}/{r['id']}"
        call("POST", path + "/writers", {"label": "rank_0", "primary": True}, headers=self.auth)
        return path

    def join(self, run, clients):
        # One writer per client: rank_0 exists; the others join the shared run.
        writers = []
        for c in range(clients):
            if c > 0:
                call("POST", run + "/writers", {"label": f"rank_{c}", "primary": False},
                     headers=self.auth)
            writers.append(f"{run}/writers/rank_{c}")
            self.seq[writers[-1]] = 0
        return writers

    def log(self, writer, rows, client=0):
        self.seq[writer] += 1  # each writer is one client's: no lock needed
        body = {"seq": self.seq[writer], "history": [
            {"step": s, "time": t, "values": {f"m{k}": v for k, v in enumerate(vals)}}
            for s, t, vals in rows]}
        call("POST", writer + "/batches", body, headers=self.auth)

    def history(self, run, key):
        # One request: `limit` (at most the server's 100,000) is per series, so every writer's
        # part of the 100k points comes at once.
        q = {"keys": key, "limit": 100000}
        r = call("GET", run + "/history?" + urllib.parse.urlencode(q), headers=self.auth)
        if any(s.get("more") for s in r["series"]):
            raise RuntimeError("a series has more than 100,000 points: page with after_step")
        return sum(len(s["points"]) for s in r["series"])

    def chart(self, run, key, clients=1):
        q = {"keys": key, "buckets": 1000 // clients}
        r = call("GET", run + "/history?" + urllib.parse.urlencode(q), headers=self.auth)
        return sum(len(s["buckets"]) for s in r["series"])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        if self.pg is not None:
            return int(self.pg.psql("cohort", "SELECT pg_database_size('cohort')")) - self.empty
        return dir_bytes(self.dir / "data")


def run_once(system, args):
    c0 = time.perf_counter()
    runs = [system.create_run(i) for i in range(args.runs)]
    create_s = time.perf_counter() - c0
    writers = system.join(runs[0], args.clients)
    call_times = []
    per_client = -(-args.steps // args.clients)

    def client(c):
        # Client c logs steps [c * per_client, (c + 1) * per_client) of every key.
        times = []
        lo, hi = c * per_client, min(args.steps, (c + 1) * per_client)
        for start in range(lo, hi, args.rows_per_call):
            rows = [(s, 1_700_000_000_000 + s, [value(0, k, s) for k in range(args.keys)])
                    for s in range(start, min(hi, start + args.rows_per_call))]
            t = time.perf_counter()
            system.log(writers[c], rows, c)
            times.append(time.perf_counter() - t)
        return times

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.clients) as pool:
        for times in pool.map(client, range(args.clients)):
            call_times += times
    ingest_s = time.perf_counter() - t0
    points = args.keys * args.steps
    reads, charts = [], []
    for _ in range(args.reads):
        t = time.perf_counter()
        n = system.history(runs[0], "m0")
        reads.append(time.perf_counter() - t)
        assert n == args.steps, (system.name, n)
        t = time.perf_counter()
        n = system.chart(runs[0], "m0", args.clients)
        charts.append(time.perf_counter() - t)
        assert 0 < n <= 1001, (system.name, n)  # MLflow adds the last step to its 1,000
    disk = system.stop()
    return {"create_run_ms": create_s / args.runs * 1e3,
            "ingest_points_per_s": points / ingest_s,
            "ingest_s": ingest_s,
            "log_call_ms": statistics.median(call_times) * 1e3,
            "history_read_ms": statistics.median(reads) * 1e3,
            "chart_1000_ms": statistics.median(charts) * 1e3,
            "disk_bytes_per_point": disk / points}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100, help="runs created (the first is logged)")
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--rows-per-call", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mlflow-repeats", type=int, default=None,
                    help="repetitions for MLflow (default: --repeats)")
    ap.add_argument("--reads", type=int, default=5, help="reads of each kind per repetition")
    ap.add_argument("--clients", type=int, default=1, help="concurrent logging clients")
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                    help="both systems' store (postgres: a throwaway cluster per repetition; "
                    "MLflow then needs psycopg2-binary in .venv-peers)")
    args = ap.parse_args()
    if os.environ.get("COHORT_PEER_BENCH") != "1":
        print("peer_bench: set COHORT_PEER_BENCH=1 to run (installs MLflow from PyPI)",
              file=sys.stderr)
        return 0
    if args.keys * args.rows_per_call > 1000:
        sys.exit("peer_bench: MLflow's log-batch takes at most 1,000 metrics per call")
    mlflow_bin = ensure_venv()
    version = subprocess.run([str(mlflow_bin), "--version"], capture_output=True,
                             text=True).stdout.strip()
    if args.mlflow_repeats is None:
        args.mlflow_repeats = args.repeats
    results = {"mlflow": [], "cohort": []}
    for i in range(max(args.repeats, args.mlflow_repeats)):
        makers = [lambda w, pg: Mlflow(mlflow_bin, w, pg)] if i < args.mlflow_repeats else []
        makers += [Cohort] if i < args.repeats else []
        for make in makers:
            work = pathlib.Path(tempfile.mkdtemp(prefix="cohort-peer-"))
            pg = PgCluster().start() if args.backend == "postgres" else None
            try:
                system = make(work, pg)
                results[system.name].append(run_once(system, args))
                print(f"peer_bench: {system.name} #{i + 1}: "
                      f"{json.dumps(results[system.name][-1])}", file=sys.stderr, flush=True)
            finally:
                if pg is not None:
                    pg.stop()
                shutil.rmtree(work, ignore_errors=True)
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for name, rs in results.items()}
    m, c = med["mlflow"], med["cohort"]
    out = {"workload": vars(args), "points": args.keys * args.steps,
           "mlflow_version": version, "median": med,
           "ratios": {"create_run_ms": m["create_run_ms"] / c["create_run_ms"],
                      "ingest_points_per_s": c["ingest_points_per_s"] / m["ingest_points_per_s"],
                      "log_call_ms": m["log_call_ms"] / c["log_call_ms"],
                      "history_read_ms": m["history_read_ms"] / c["history_read_ms"],
                      "chart_1000_ms": m["chart_1000_ms"] / c["chart_1000_ms"],
                      "disk_bytes_per_point": m["disk_bytes_per_point"] /
                      c["disk_bytes_per_point"]},
           "runs": results}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
