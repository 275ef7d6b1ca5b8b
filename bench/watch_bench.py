"""`watch` (docs/benchmarks.md, "watch"): what `run.watch(model, log="all", log_freq=100)` adds
to the step time of a ~10M-parameter model trained on the CPU, for Cohort and, in the same
rounds, for the vendor SDK (`wandb.watch`, offline mode: its hooks and histograms run the same
way; nothing is sent). Four variants, each a fresh training process: cohort without watch
(logging the loss only), cohort with watch, wandb without watch, wandb with watch; the order
of the variants rotates every round. Each process trains STEPS steps (an MLP 1024-2048-2048-
1024-1024, 9.4M parameters, SGD, batch 16, one torch thread) and reports its mean wall time per
step after a warm-up, and its CPU time per step (all threads: the SDKs' workers included).
Cohort logs into a fresh server (SQLite) on loopback through the real node agent.

Usage: python bench/watch_bench.py [--rounds 5] [--steps 600] [--device cuda] [--batch 16]
       [--sdks cohort,wandb] [--warm 150]   (the venv's python: torch, wandb)
On a GPU (`--device cuda`, bench/gpu_check.py) the model, data and histograms live on the device
and each step ends with `loss.item()` (the loop waits for the device there, as a loop that logs
its loss does); torch keeps its default threads there.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from _bench_server import BenchServer

SCRIPT = r"""
import json, os, resource, sys, time
import torch
torch.manual_seed(0)
sdk, watched, steps = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
device, batch = sys.argv[4], int(sys.argv[5])
if device == "cpu":
    torch.set_num_threads(1)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
    torch.nn.Linear(2048, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(batch, 1024, device=device), torch.randn(batch, 1024, device=device)
if sdk == "cohort":
    import cohort as sdk_mod
    run = sdk_mod.init(project="watch-bench")
else:
    import wandb as sdk_mod
    run = sdk_mod.init(project="watch-bench", mode="offline", dir=os.environ["WANDB_DIR"])
if watched:
    run.watch(model, log="all", log_freq=100)
warm = int(sys.argv[6])
times = []
for i in range(steps + warm):
    if i == warm:
        t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    s0 = time.perf_counter()
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    run.log({"loss": loss.item()})
    if i >= warm:
        times.append(time.perf_counter() - s0)
wall = time.perf_counter() - t0
c1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
params = sum(p.numel() for p in model.parameters())
run.finish()
times.sort()
median = times[len(times) // 2]
print(json.dumps({"step_ms": wall / steps * 1e3, "cpu_ms": cpu / steps * 1e3,
                  "median_ms": median * 1e3, "spikes_ms": (wall / steps - median) * 1e3,
                  "params": params}))
"""

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--sdks", default="cohort,wandb")
    # Steps before the measured ones: past the first watched step (step 100), whose one-time
    # costs (new keys, first kernels) a long run does not pay again.
    ap.add_argument("--warm", type=int, default=150)
    args = ap.parse_args()
    sdks = args.sdks.split(",")
    VARIANTS = [(s, w) for s in sdks for w in ("0", "1")]
    print("load average at start:", os.getloadavg(), file=sys.stderr)
    results = {v: [] for v in VARIANTS}
    params = 0
    with tempfile.TemporaryDirectory() as tmp, BenchServer(tmp) as srv:
        env = dict(srv.env, WANDB_DIR=tmp, WANDB_SILENT="true", WANDB_CONSOLE="off")
        for r in range(args.rounds):
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            for sdk, watched in order:
                proc = subprocess.run([sys.executable, "-c", SCRIPT, sdk, watched, str(args.steps),
                                       args.device, str(args.batch), str(args.warm)],
                                      env=env, capture_output=True, text=True, timeout=900)
                if proc.returncode != 0:
                    sys.exit(f"{sdk} watch={watched} failed:\n{proc.stderr[-3000:]}")
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                params = out["params"]
                results[(sdk, watched)].append(out)
                print(f"round {r}: {sdk:6} watch={watched}: {out['step_ms']:.2f} ms/step "
                      f"(median {out['median_ms']:.2f}), cpu {out['cpu_ms']:.2f} ms/step",
                      file=sys.stderr)
    print("load average at end:", os.getloadavg(), file=sys.stderr)
    keys = ("step_ms", "cpu_ms", "median_ms", "spikes_ms")
    med = {f"{s}_watch{w}": {k: statistics.median(o[k] for o in results[(s, w)]) for k in keys}
           for s, w in VARIANTS}
    # Added by watch: per round (the variants of one round ran back to back), then the median.
    added = {}
    for s in sdks:
        for k in ("step_ms", "cpu_ms"):
            ratios = [b[k] / a[k] - 1 for a, b in zip(results[(s, "0")], results[(s, "1")])]
            added[f"{s}_{k}_added_pct"] = round(statistics.median(ratios) * 100, 2)
        # The watch's work falls on one step in log_freq: the mean step's excess over the median
        # step, with watch minus without, over the median step without (per round, then the
        # median). Robust to a process that ran slower throughout (another load on the cores).
        spikes = [(b["spikes_ms"] - a["spikes_ms"]) / a["median_ms"]
                  for a, b in zip(results[(s, "0")], results[(s, "1")])]
        added[f"{s}_watch_steps_excess_pct"] = round(statistics.median(spikes) * 100, 2)
    print(json.dumps({"params": params, "steps": args.steps, "rounds": args.rounds,
                      "device": args.device, "batch": args.batch, "warm": args.warm,
                      "medians": med, "watch_added": added}, indent=1))


if __name__ == "__main__":
    main()
