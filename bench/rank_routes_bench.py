#!/usr/bin/env python3
"""Times the rank-insight routes end to end (issue 8): a real `cohort server` (SQLite store) in a
temporary HOME, one shared run of W writers x S steps ingested over HTTP in batches of B rows,
then medians of GET .../ranks/aggregate (1,000 and 100 buckets) and .../ranks/stragglers (60
columns),
next to GET .../history with 1,000 buckets for the same writers (the per-writer chart query the
aggregate builds on) as the baseline.

    python3 bench/rank_routes_bench.py --build build-ranks --writers 16 --steps 100000
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time
import urllib.request


def call(url, key, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def timed(fn, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--writers", type=int, default=16)
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--batch", type=int, default=400,
                   help="rows per batch (< 512 keeps chunks aligned)")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    binary = pathlib.Path(a.build) / "src" / "cli" / "cohort"
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        server = subprocess.Popen([str(binary), "server", "--port", "0", "--data-dir",
                                   home + "/data"], stdout=subprocess.PIPE, text=True, env=env)
        try:
            url = server.stdout.readline().strip()
            key = json.load(open(home + "/.config/cohort/config.json"))["api_key"]
            me = call(url + "/api/v1/viewer", key)["entity"]
            base = f"{url}/api/v1/runs/{me}/bench"
            call(base, key, "POST", {"id": "ranks"})
            run = base + "/ranks"
            t0 = time.perf_counter()
            for w in range(a.writers):
                label = f"rank_{w}"
                call(run + "/writers", key, "POST", {"label": label})
                seq = 0
                for start in range(0, a.steps, a.batch):
                    seq += 1
                    rows = [{"step": s, "time": 1700000000000 + 100 * s + (w == 3) * 40 * s,
                             "values": {"loss": 1.0 / (s + 1) + 0.001 * w}}
                            for s in range(start, min(a.steps, start + a.batch))]
                    call(f"{run}/writers/{label}/batches", key, "POST",
                         {"seq": seq, "history": rows})
            ingest_s = time.perf_counter() - t0
            labels = ",".join(f"rank_{w}" for w in range(a.writers))
            agg = lambda: call(run + "/ranks/aggregate?key=loss&buckets=1000", key)  # noqa: E731
            strag = lambda: call(run + "/ranks/stragglers?columns=60", key)  # noqa: E731
            hist = lambda: call(  # noqa: E731
                f"{run}/history?keys=loss&writers={labels}&buckets=1000", key)
            body = strag()
            flagged = [body["members"][i]["writer"] for i in body["stragglers"]]
            print(f"{a.writers} writers x {a.steps} steps ({a.writers * a.steps:,} points), "
                  f"ingest {ingest_s:.1f} s; flagged: {flagged}")
            print(f"aggregate, 1,000 buckets:  {timed(agg, a.reps):8.1f} ms "
                  f"({len(agg()['buckets'])} buckets)")
            agg100 = lambda: call(run + "/ranks/aggregate?key=loss&buckets=100", key)  # noqa: E731
            print(f"aggregate, 100 buckets:    {timed(agg100, a.reps):8.1f} ms "
                  f"({len(agg100()['buckets'])} buckets, width {agg100()['bucket_width']})")
            print(f"stragglers, 60 columns:    {timed(strag, a.reps):8.1f} ms")
            print(f"baseline: history of the same writers, 1,000 buckets each: "
                  f"{timed(hist, a.reps):8.1f} ms")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
