#!/usr/bin/env python3
"""MLflow's history read into a DataFrame, for issue 21's side by side with Cohort's
`Run.history()` (docs/benchmarks.md "Issue 21: history reads against MLflow and on
PostgreSQL"; Cohort's figures: bench/read_bench.py), printed as one JSON object.

    /tmp/mlflow-venv/bin/python bench/peers/mlflow_read_bench.py [--points 100000] [--keys 1]
        [--runs 10] [--repeat 5] [--via sqlite,server]

Needs `mlflow` (and pandas) importable by the interpreter that runs it, e.g. a separate venv:
    /usr/bin/python3 -m venv /tmp/mlflow-venv
    /tmp/mlflow-venv/bin/pip install "mlflow>=2.10,<3" "sqlalchemy<2.1" "numpy<2"
Without them it says so and exits 0 (MLflow is not a dependency of the project: ~800 MB).

The data is read_bench.py's: one run whose keys m0.. (--keys) each have --points points at
steps 0..N-1 (a noisy decreasing curve), logged as a user would, through
`MlflowClient(tracking_uri="sqlite:///...").log_batch` (1,000 metrics per call, MLflow's limit)
into a local SQLite tracking store. Then, per way of reading it (--via):
  - sqlite: `MlflowClient(tracking_uri="sqlite:///<the store>")`, in-process (SQLAlchemy, no
    server), the fastest way MLflow reads;
  - server: `mlflow server --workers 1` on the same store file and
    `MlflowClient(tracking_uri="http://...")`, what a team with a tracking server does (the
    client pages through REST get-history, 25,000 points a page); with the server's CPU time
    per read (/proc, the server and its gunicorn workers) and the JSON answer's bytes per point
    (the raw REST pages, fetched once with urllib).
Medians of --repeat calls after one warm call:
  - history_1key_ms: `get_metric_history(run, "m0")` into a DataFrame (step, m0), the points
    checked (count, order);
  - history_{K}keys_ms (--keys > 1): one get_metric_history per key, joined on step into one
    wide frame (MLflow has no multi-key read); --repeat // 3 times, no warm call;
  - history_runs_ms (--runs > 0): the one-key read of the run --runs times in a loop into one
    long frame (run, step, m0), as read_bench.py's `Api.history(runs)` reads one run N times
    (MLflow's client has no many-run history read); --repeat // 3 times (at least once),
    with no warm call of its own (the one-key reads before it warmed the store).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # bench/
from _bench_server import timed  # noqa: E402  (stdlib only: runs in mlflow's venv too)


def value(step, k):
    return 1.0 / (1.0 + 0.001 * step) + 0.01 * math.sin(step * 0.7 + k)


def tree_cpu_ms(pid):
    """utime + stime (ms) of pid and its descendants that are alive now."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        out = subprocess.run(["pgrep", "-P", str(p)], capture_output=True, text=True).stdout
        todo += [int(c) for c in out.split()]
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_run(client, points, keys):
    """One run of keys m0.. x points steps; (run id, seconds the logging took)."""
    from mlflow.entities import Metric
    exp = client.create_experiment("bench")
    run = client.create_run(exp, run_name="read").info.run_id
    per_call = max(1, 1000 // keys)  # log_batch takes at most 1,000 metrics
    t = time.perf_counter()
    for start in range(0, points, per_call):
        metrics = [Metric(f"m{k}", value(s, k), 1_700_000_000_000 + s, s)
                   for s in range(start, min(points, start + per_call)) for k in range(keys)]
        client.log_batch(run, metrics=metrics)
    return run, time.perf_counter() - t


def reads(client, run, points, keys, runs, repeat):
    """The module docstring's medians through `client`."""
    import pandas as pd

    def one_key(key="m0"):
        hist = client.get_metric_history(run, key)
        df = pd.DataFrame({"step": [m.step for m in hist], key: [m.value for m in hist]})
        if len(df) != points or not df["step"].is_monotonic_increasing:
            df = df.sort_values("step", ignore_index=True)
        if len(df) != points or df["step"].iloc[-1] != points - 1:
            raise RuntimeError(f"get_metric_history: {len(df)} points, expected {points}")
        return df

    out = {}
    out["history_1key_ms"], _ = timed(one_key, repeat)
    if keys > 1:
        def wide():
            return pd.concat([one_key(f"m{k}").set_index("step") for k in range(keys)],
                             axis=1).reset_index()
        out[f"history_{keys}keys_ms"], df = timed(wide, max(1, repeat // 3), warm=False)
        if df.shape != (points, keys + 1):
            raise RuntimeError(f"{keys} keys: frame {df.shape}")
    if runs:
        def many():
            return pd.concat([one_key().assign(run=i) for i in range(runs)], ignore_index=True)
        out["history_runs_ms"], df = timed(many, max(1, repeat // 3), warm=False)
        if len(df) != runs * points:
            raise RuntimeError(f"{runs} runs: {len(df)} rows")
        out["runs"] = runs
    return out


def rest_bytes(url, run, key):
    """Bytes of the REST get-history answers for `key` (all pages) and their point count."""
    total, points, token = 0, 0, None
    while True:
        q = {"run_id": run, "metric_key": key, "max_results": 25000}
        if token:
            q["page_token"] = token
        with urllib.request.urlopen(url + "/api/2.0/mlflow/metrics/get-history?" +
                                    urllib.parse.urlencode(q), timeout=300) as resp:
            body = resp.read()
        total += len(body)
        answer = json.loads(body)
        points += len(answer.get("metrics", []))
        token = answer.get("next_page_token")
        if not token:
            return total, points


def via_server(mlflow, db_uri, work, run, args):
    from mlflow.tracking import MlflowClient
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", db_uri,
         "--default-artifact-root", str(work / "artifacts")],
        stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("mlflow server did not start: see " + log.name)
                time.sleep(0.3)
        client = MlflowClient(tracking_uri=url)
        cpu0 = tree_cpu_ms(proc.pid)
        t = time.perf_counter()
        one = reads(client, run, args.points, 1, 0, args.repeat)
        n = args.repeat + 1
        one["server_cpu_ms_per_read"] = (tree_cpu_ms(proc.pid) - cpu0) / n
        one["client_ms_total"] = (time.perf_counter() - t) * 1e3
        size, points = rest_bytes(url, run, "m0")
        one["json_bytes_per_point"] = size / points
        more = reads(client, run, args.points, args.keys, args.runs, args.repeat)
        more.pop("history_1key_ms")
        one.update(more)
        return one
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # gunicorn's workers with it
        proc.wait(timeout=30)
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=1, help="keys logged (m0..); > 1: a wide read")
    ap.add_argument("--runs", type=int, default=10, help="reads of the run into one long frame")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--via", default="sqlite,server")
    args = ap.parse_args()
    try:
        import mlflow
        import pandas  # noqa: F401  (the frames)
        from mlflow.tracking import MlflowClient
    except ImportError as e:
        print(f"mlflow_read_bench: skipped: {e.name or e} is not installed for {sys.executable} "
              "(see the docstring: a separate venv with mlflow)", file=sys.stderr)
        return 0
    work = pathlib.Path(tempfile.mkdtemp(prefix="mlflow-read-"))
    try:
        db_uri = f"sqlite:///{work}/mlflow.db"
        client = MlflowClient(tracking_uri=db_uri)
        out = {"mlflow": mlflow.__version__, "points": args.points, "keys": args.keys,
               "repeat": args.repeat, "cpus": os.cpu_count(),
               "load_avg_before": os.getloadavg()[0]}
        run, secs = log_run(client, args.points, args.keys)
        out["log_s"] = secs
        out["store_bytes_per_point"] = (work / "mlflow.db").stat().st_size / (args.points *
                                                                             args.keys)
        for via in args.via.split(","):
            print(f"mlflow_read_bench: reading via {via}", file=sys.stderr, flush=True)
            if via == "sqlite":
                out["sqlite"] = reads(client, run, args.points, args.keys, args.runs,
                                      args.repeat)
            elif via == "server":
                out["server"] = via_server(mlflow, db_uri, work, run, args)
            else:
                sys.exit(f"mlflow_read_bench: --via {via}: sqlite or server")
        out["load_avg_after"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
