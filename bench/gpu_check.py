"""The checks that need a real GPU (docs/benchmarks.md, "On a GPU"), in one short run against a
fresh server on loopback, through the real node agent. Prints one JSON document; exits 1 when
a check fails (each failure named in "failed").

1. System metrics from the real NVML: a training process runs bf16 matrix products on GPU 0 for
   ~8 s while the agent samples every second; the run's `system/gpu.0.*` series are read back
   and checked against `nvidia-smi` read by the same process meanwhile: the total memory equal,
   the used memory within 10% of nvidia-smi's, utilisation above 50% during the load, a
   plausible temperature, power and SM clock.
2. `watch` on the GPU: a model on the device, `run.watch(model, log="all", log_freq=1)` for two
   steps; every `gradients/<name>` and `parameters/<name>` histogram read back through
   `cohort.Api`: counts summing to each tensor's elements, and the first step's counts equal
   (within 0.1% of the elements, rounding at bin edges) to a CPU histogram of the same values
   (the parameters before the first update, the first backward's gradients).

Usage: python bench/gpu_check.py   (a Python with torch built for CUDA, the cohort extension)
A dry run without a GPU (the script's plumbing only; its checks fail): GPU_CHECK_DEVICE=cpu,
GPU_CHECK_SMI=<a script answering as nvidia-smi>, COHORT_NVML_LIBRARY=<tests/fake_nvml's library>.
"""
import json
import sys
import tempfile

from _bench_server import BenchServer

LOAD = r"""
import json, os, subprocess, time
import torch
import cohort
dev = os.environ.get("GPU_CHECK_DEVICE", "cuda")
run = cohort.init(project="gpu-check", name="load",
                  settings=cohort.Settings(x_stats_sampling_interval=1))
a = torch.randn(*((8192, 8192) if dev == "cuda" else (256, 256)), device=dev, dtype=torch.bfloat16)
hold = torch.empty(4 << 30 if dev == "cuda" else 1, dtype=torch.uint8, device=dev)  # 4 GiB held
smi = []

def query():
    out = subprocess.run([os.environ.get("GPU_CHECK_SMI", "nvidia-smi"), "--query-gpu=name,memory.total,memory.used,"
                          "utilization.gpu,temperature.gpu,power.draw,clocks.sm",
                          "--format=csv,noheader,nounits", "-i", "0"],
                         capture_output=True, text=True, check=True).stdout
    f = [x.strip() for x in out.splitlines()[0].split(",")]
    smi.append({"name": f[0], "memory_total_mb": float(f[1]), "memory_used_mb": float(f[2]),
                "gpu": float(f[3]), "temp": float(f[4]), "power_watts": float(f[5]),
                "sm_clock_mhz": float(f[6]), "time": time.time()})

end = time.time() + 8
step = 0
while time.time() < end:
    for _ in range(20):
        b = a @ a
    if dev == "cuda":
        torch.cuda.synchronize()
    run.log({"load/step": step})
    step += 1
    if step % 25 == 0:
        query()
query()
time.sleep(2)  # one more sample while the memory is held
print(json.dumps({"run": run.path, "smi": smi}))
run.finish()
"""

WATCH = r"""
import json, os
import numpy as np
import torch
import cohort
dev = os.environ.get("GPU_CHECK_DEVICE", "cuda")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(64, 256, device=dev), torch.randint(0, 10, (64,), device=dev)
run = cohort.init(project="gpu-check", name="watch")
run.watch(model, log="all", log_freq=1, num_bins=32)
params0 = {n: p.detach().cpu().double().numpy().ravel() for n, p in model.named_parameters()}
grads0 = None
for step in range(2):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    if grads0 is None:
        grads0 = {n: p.grad.detach().cpu().double().numpy().ravel()
                  for n, p in model.named_parameters()}
    opt.step()
    run.log({"loss": loss.item()})
path = run.path
run.finish()
api_run = cohort.Api().run(path)
failed, seen = [], {}
for kind, ref in (("parameters", params0), ("gradients", grads0)):
    for name, values in ref.items():
        key = f"{kind}/{name}"
        df = api_run.histograms(key)
        seen[key] = len(df)
        if len(df) != 2:
            failed.append(f"{key}: {len(df)} steps read back, 2 logged")
            continue
        first = df.sort_values("step").iloc[0]
        counts, edges = np.asarray(first["counts"]), np.asarray(first["edges"])
        if counts.sum() != values.size:
            failed.append(f"{key}: counts sum to {counts.sum()}, the tensor has {values.size}")
        want, _ = np.histogram(values, bins=len(counts), range=(edges[0], edges[-1]))
        off = np.abs(counts - want).sum()
        if off > max(2, values.size // 1000):
            failed.append(f"{key}: {off} values in other bins than a CPU histogram")
        if not (np.isclose(edges[0], values.min()) and np.isclose(edges[-1], values.max())):
            failed.append(f"{key}: range {edges[0]}..{edges[-1]}, values "
                          f"{values.min()}..{values.max()}")
print(json.dumps({"run": path, "keys": seen, "failed": failed}))
"""

SYSTEM_KEYS = ("gpu.0.gpu", "gpu.0.memory_used_mb", "gpu.0.memory_total_mb", "gpu.0.temp",
               "gpu.0.power_watts", "gpu.0.sm_clock_mhz", "gpu.0.memory_allocated")


def check_system(srv, load):
    """The load run's system series against nvidia-smi; (figures, failures)."""
    failed = []
    entity, project, run_id = load["run"].split("/")
    body = srv.get(f"/api/v1/runs/{entity}/{project}/{run_id}/system?keys="
                   + ",".join(SYSTEM_KEYS))
    series = {}
    for s in body["series"]:
        key = s["key"]
        series[key] = [p[-1] for p in s["points"]]  # [step, time, value]
    figures = {k: {"n": len(v), "min": min(v), "max": max(v)} for k, v in series.items() if v}
    smi = load["smi"]
    for key in SYSTEM_KEYS:
        if not series.get(key):
            failed.append(f"system/{key}: no samples")
    if failed:
        return {"series": figures}, failed
    total = series["gpu.0.memory_total_mb"]
    if abs(max(total) - smi[-1]["memory_total_mb"]) > 1:
        failed.append(f"memory_total_mb {max(total)} != nvidia-smi {smi[-1]['memory_total_mb']}")
    used_max, smi_used = max(series["gpu.0.memory_used_mb"]), max(s["memory_used_mb"] for s in smi)
    if abs(used_max - smi_used) > 0.1 * smi_used:
        failed.append(f"memory_used_mb peak {used_max} vs nvidia-smi {smi_used}")
    if max(series["gpu.0.gpu"]) < 50:
        failed.append(f"utilisation peak {max(series['gpu.0.gpu'])}% under a matrix-product load")
    if not 10 <= max(series["gpu.0.temp"]) <= 110:
        failed.append(f"temperature {max(series['gpu.0.temp'])}")
    if not max(series["gpu.0.power_watts"]) > 50:
        failed.append(f"power peak {max(series['gpu.0.power_watts'])} W under load")
    if not max(series["gpu.0.sm_clock_mhz"]) > 500:
        failed.append(f"SM clock peak {max(series['gpu.0.sm_clock_mhz'])} MHz under load")
    smi_range = {k: [min(x[k] for x in smi), max(x[k] for x in smi)]
                 for k in smi[0] if k not in ("name", "time")}
    return {"gpu": smi[0]["name"], "series": figures, "nvidia_smi": smi_range}, failed


def main():
    out = {"failed": []}
    with tempfile.TemporaryDirectory() as tmp, BenchServer(tmp) as srv:
        load = json.loads(srv.run_script(LOAD, timeout=300).stdout.strip().splitlines()[-1])
        out["system"], failed = check_system(srv, load)
        out["failed"] += failed
        watch = json.loads(srv.run_script(WATCH, timeout=300).stdout.strip().splitlines()[-1])
        out["watch"] = watch["keys"]
        out["failed"] += watch["failed"]
    print(json.dumps(out, indent=1))
    sys.exit(1 if out["failed"] else 0)


if __name__ == "__main__":
    main()
