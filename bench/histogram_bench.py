"""Histograms (docs/benchmarks.md, "Histograms"): the training-thread cost of logging a 64-bin
histogram of a 1M-element tensor (cohort.Histogram + run.log, and run.log of a ready
histogram), against torch.histc alone and the vendor SDK's wandb.Histogram of the same data
(the peer; its constructor only, no wandb run); and the read side: GET .../histograms of
10,000 steps x 64 bins (every step, and 500 buckets), with edges shared by every step (sent once) and, as the
baseline, edges that differ at every step (sent per step). A fresh server, loopback only.
QUERY_ONLY=1 skips the logging measurements.

Usage: python3 bench/histogram_bench.py   (the venv's python: torch, numpy, wandb)
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("BUILD_DIR", ROOT / "build"))
COHORT = BUILD / "src" / "cli" / "cohort"

SCRIPT = r"""
import json, os, statistics, time
import numpy as np
import torch
import cohort
torch.set_num_threads(1)
t = torch.randn(1_000_000)
a = t.numpy()
run = cohort.init(project="bench")
def p50(fn, n):
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e6
ready = cohort.Histogram(t, num_bins=64)
res = {} if os.environ.get("QUERY_ONLY") else {
  "histc_us": p50(lambda i: torch.histc(t, bins=64, min=-5, max=5), 200),
  "aminmax_us": p50(lambda i: torch.aminmax(t), 200),
  "cohort_histogram_and_log_us": p50(lambda i: run.log({"h": cohort.Histogram(t, num_bins=64)}), 200),
  "log_ready_histogram_us": p50(lambda i: run.log({"r": ready}), 2000),
  "log_scalar_us": p50(lambda i: run.log({"s": float(i)}), 2000),
}
try:
    if os.environ.get("QUERY_ONLY"):
        raise ImportError("QUERY_ONLY")
    import wandb
    res["wandb_histogram_us"] = p50(lambda i: wandb.Histogram(a), 200)
    res["wandb_histogram_from_tensor_us"] = p50(lambda i: wandb.Histogram(t), 50)
except Exception as e:
    res["wandb_error"] = repr(e)
# The query's data: 10,000 steps x 64 bins (counts that change every step).
rng = np.random.default_rng(0)
edges = np.linspace(-4, 4, 65)
for step in range(10_000):
    counts = rng.integers(0, 1000, size=64)
    # "q": the same edges at every step (what watch() and np.histogram over a fixed range give);
    # "qv": the baseline, edges that differ at every step (each step must carry its own).
    run.log({"q": cohort.Histogram(np_histogram=(counts, edges)),
             "qv": cohort.Histogram(np_histogram=(counts, edges + step * 1e-6))},
            step=10_000 + step)
print("RUN", run.id)
run.finish()
print(json.dumps(res))
"""


def main():
    with tempfile.TemporaryDirectory() as tmp:
        home = pathlib.Path(tmp) / "home"
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
                   XDG_RUNTIME_DIR=str(home / "run"), XDG_CACHE_HOME=str(home / "cache"))
        (home / "run").mkdir(parents=True, mode=0o700)
        server = subprocess.Popen([str(COHORT), "server", "--port", "0", "--data-dir",
                                   f"{tmp}/data"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            url = server.stdout.readline().strip()
            env.update({"PYTHONPATH": str(ROOT / "python"), "COHORT_BUILD_DIR": str(BUILD),
                        "COHORT_BIN": str(COHORT), "COHORT_AGENT_IDLE_S": "5",
                        "WANDB_MODE": "disabled", "WANDB_SILENT": "true"})
            script = pathlib.Path(tmp) / "log.py"
            script.write_text(SCRIPT)
            proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                                  text=True, timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-3000:])
            lines = proc.stdout.strip().splitlines()
            res = json.loads(lines[-1])
            run_id = next(l.split()[1] for l in lines if l.startswith("RUN "))
            cfg = json.loads((home / ".config" / "cohort" / "config.json").read_text())
            me = json.loads(urllib.request.urlopen(urllib.request.Request(
                url + "/api/v1/viewer", headers={"Authorization": "Bearer " + cfg["api_key"]})).read())
            path = f"{url}/api/v1/runs/{me['entity']}/bench/{run_id}/histograms?keys=q"

            def timed(u, n=20):
                out, size = [], 0
                for _ in range(n):
                    t0 = time.perf_counter()
                    body = urllib.request.urlopen(urllib.request.Request(
                        u, headers={"Authorization": "Bearer " + cfg["api_key"]})).read()
                    out.append(time.perf_counter() - t0)
                    size = len(body)
                return statistics.median(out) * 1000, size, json.loads(body)

            deadline = time.time() + 60
            while True:
                all_ms, all_bytes, body = timed(path, 1)
                if body["histograms"] and body["histograms"][0]["count"] == 10_000:
                    break
                if time.time() > deadline:
                    raise RuntimeError("the 10,000 steps did not arrive")
                time.sleep(0.5)
            res["query_all_ms"], res["query_all_bytes"], _ = timed(path)
            res["query_500_buckets_ms"], res["query_500_buckets_bytes"], _ = timed(path + "&buckets=500")
            varied = path.replace("keys=q", "keys=qv")
            res["query_all_varied_edges_bytes"] = timed(varied, 1)[1]
            # The same reads with curl (request to last byte, no JSON parsing in Python).
            for name, u in (("curl_all_ms", path), ("curl_all_varied_edges_ms", varied),
                            ("curl_500_buckets_ms", path + "&buckets=500")):
                times = []
                for _ in range(20):
                    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}",
                                          "-H", "Authorization: Bearer " + cfg["api_key"], u],
                                         capture_output=True, text=True, check=True).stdout
                    times.append(float(out) * 1000)
                res[name] = statistics.median(times)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
