"""Histograms (docs/benchmarks.md, "Histograms"): the training-thread cost of logging a 64-bin
histogram of a 1M-element tensor (cohort.Histogram + run.log, and run.log of a ready
histogram), against torch.histc alone and the vendor SDK's wandb.Histogram of the same data
(the peer; its constructor only, no wandb run); and the read side: GET .../histograms of
10,000 steps x 64 bins (every step, and 500 buckets), with edges shared by every step (sent once) and, as the
baseline, edges that differ at every step (sent per step). A fresh server, loopback only.
QUERY_ONLY=1 skips the logging measurements, LOG_ONLY=1 the query. DEVICE=cuda puts the tensor on
the GPU (bench/gpu_check.py): the torch-only timings then wait for the device
(`torch.cuda.synchronize`), and `two_transfers_us` times the bare torch calls of the SDK's path
for an accelerator tensor (the range brought back, then `histc` over it and its counts back: two
waits for the device), without the class's checks and conversions.

`*_paced_*`: a training step (~5 ms of matrix products on the CPU) between two calls, untimed,
so that the histogram worker keeps up as in a training loop; `_at_call_` with
COHORT_HISTOGRAM_DEFER=0 (the histogram computed on the training thread), in the same process.

Usage: python3 bench/histogram_bench.py   (the venv's python: torch, numpy, wandb)
"""
import json
import os
import statistics
import subprocess
import tempfile
import time

from _bench_server import BenchServer, p50

SCRIPT = r"""
import json, os, statistics, time
import numpy as np
import torch
import cohort
from _bench_server import p50
torch.set_num_threads(1)
device = os.environ.get("DEVICE", "cpu")
t = torch.randn(1_000_000, device=device)
a = t.cpu().numpy()
sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
run = cohort.init(project="bench")
ready = cohort.Histogram(t, num_bins=64)


def two_transfers(t):
    lo, hi = torch.stack(torch.aminmax(t)).tolist()
    return torch.histc(t, bins=64, min=lo, max=hi).to(device="cpu", dtype=torch.float64).numpy()


# p50 (us) of fn(i) called after work() each time (untimed: a training step between two
# histograms, as watch logs them), so that the histogram worker keeps up, as in a training loop.
def paced(fn, n, work):
    times = []
    for i in range(n):
        work()
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e6


m = torch.randn(384, 384, device=device)
step = lambda: (m @ m @ m).sum().item()  # ~5 ms of one CPU thread, a sync on a GPU


# fn() with COHORT_HISTOGRAM_DEFER set to `value` (read at each Histogram).
def with_defer(value, fn):
    before = os.environ.get("COHORT_HISTOGRAM_DEFER")
    os.environ["COHORT_HISTOGRAM_DEFER"] = value
    try:
        return fn()
    finally:
        if before is None:
            del os.environ["COHORT_HISTOGRAM_DEFER"]
        else:
            os.environ["COHORT_HISTOGRAM_DEFER"] = before


def paced_pair():
    later, at_call = [], []
    for _ in range(4):
        later.append(paced(lambda i: run.log({"hp": cohort.Histogram(t, num_bins=64)}), 50, step))
        at_call.append(with_defer("0", lambda: paced(
            lambda i: run.log({"hc": cohort.Histogram(t, num_bins=64)}), 50, step)))
    return {"cohort_histogram_and_log_paced_us": statistics.median(later),
            "cohort_histogram_and_log_paced_at_call_us": statistics.median(at_call),
            "paced_blocks_us": {"later": later, "at_call": at_call}}


def synced(fn):
    def call(i):
        fn(i)
        sync()
    return call


res = {"device": device} if os.environ.get("QUERY_ONLY") else {
  "device": device,
  "histc_us": p50(synced(lambda i: torch.histc(t, bins=64, min=-5, max=5)), 200),
  "aminmax_us": p50(synced(lambda i: torch.aminmax(t)), 200),
  "cohort_histogram_and_log_us": p50(lambda i: run.log({"h": cohort.Histogram(t, num_bins=64)}), 200),
  # After a training step each (the worker keeps up): computed later (the default) and at the
  # call (COHORT_HISTOGRAM_DEFER=0), alternating blocks of 50 calls, four of each.
  **paced_pair(),
  "log_ready_histogram_us": p50(lambda i: run.log({"r": ready}), 2000),
  "log_scalar_us": p50(lambda i: run.log({"s": float(i)}), 2000),
}
if device != "cpu" and not os.environ.get("QUERY_ONLY"):
    res["two_transfers_us"] = p50(lambda i: two_transfers(t), 200)
    res["cohort_histogram_only_us"] = p50(lambda i: cohort.Histogram(t, num_bins=64), 200)
try:
    if os.environ.get("QUERY_ONLY"):
        raise ImportError("QUERY_ONLY")
    import wandb
    res["wandb_histogram_us"] = p50(lambda i: wandb.Histogram(a), 200)
    # A tensor as users pass it (on an accelerator the vendor's class needs it on the CPU).
    res["wandb_histogram_from_tensor_us"] = p50(
        lambda i: wandb.Histogram(t if device == "cpu" else t.cpu()), 50)
except Exception as e:
    res["wandb_error"] = repr(e)
if os.environ.get("LOG_ONLY"):
    run.finish()
    print(json.dumps(res))
    raise SystemExit(0)
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
    with tempfile.TemporaryDirectory() as tmp, BenchServer(
            tmp, {"WANDB_MODE": "disabled", "WANDB_SILENT": "true", "COHORT_MODE": "online"}) as srv:
        lines = srv.run_script(SCRIPT).stdout.strip().splitlines()
        res = json.loads(lines[-1])
        if os.environ.get("LOG_ONLY"):
            print(json.dumps(res, indent=1))
            return
        run_id = next(l.split()[1] for l in lines if l.startswith("RUN "))
        key = srv.api_key()
        entity = srv.get("/api/v1/viewer")["entity"]
        path = f"/api/v1/runs/{entity}/bench/{run_id}/histograms?keys=q"

        def timed(u, n=20):
            """The median time of n reads of u (ms), the body's size and the body."""
            got = {}
            ms = p50(lambda i: got.update(body=srv.read(u)), n) / 1000
            return ms, len(got["body"]), json.loads(got["body"])

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
                                      "-H", "Authorization: Bearer " + key, srv.url + u],
                                     capture_output=True, text=True, check=True).stdout
                times.append(float(out) * 1000)
            res[name] = statistics.median(times)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
