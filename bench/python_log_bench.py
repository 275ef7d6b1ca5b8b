#!/usr/bin/env python3
"""Python SDK benchmarks (DESIGN.md section 4), printed as one JSON object.

    COHORT_BUILD_DIR=build PYTHONPATH=python .venv/bin/python bench/python_log_bench.py

Measures, with the `cohort` package over the C++ client:

- ``log_disabled``: ``run.log`` of 10 scalars with ``mode="disabled"`` (conversion only);
- ``log_online``: the same on a live run (agent, server), p50/p99 per call;
- ``log_online_batched``: mean per call over blocks of 1,000 calls (no timer in the loop);
- ``init_cold``/``init_warm``: ``cohort.init()`` in a fresh process with no agent running
  (it is spawned) and with the agent already running;
- ``finish_after_1m_points``: ``run.finish()`` after 100,000 calls of 10 scalars.

Per-call times come from ``time.perf_counter_ns`` around each call, minus the median cost of an
empty timer pair. Unless ``--base-url`` is given, a ``cohort server`` is started on a free port
with a temporary HOME (the binary from $COHORT_BUILD_DIR, default build/).

``--vendor`` runs, instead, the same workload side by side with the seed vendor's SDK (``wandb``
from PyPI, python/requirements-dev.txt) in offline mode (``WANDB_MODE=offline``, and an
unreachable proxy so that no request could leave the machine) and with Cohort (online: agent +
the local server; and offline), each repetition in a fresh interpreter: import, ``init``,
``--vendor-steps`` calls of ``log`` with ``--vendor-keys`` scalars (each call timed), ``finish``;
with the CPU time (user + system) of the training process itself (``cpu_s``) and of the child
processes it waited for (``cpu_children_s``: the vendor's service when it was reaped; Cohort's
agent is a daemon, never a waited-for child, so its CPU is in neither). Cohort's agent is stopped
before each Cohort repetition, so its ``init`` spawns it, as the vendor's spawns its service.
Medians over ``--vendor-repeats`` repetitions; ``ratios`` is vendor / Cohort online.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("COHORT_BUILD_DIR", ROOT / "build"))
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("COHORT_BUILD_DIR", str(BUILD))

VALUES = {f"metric_{i}": 0.1 * i for i in range(10)}


def percentiles(samples_ns: List[float]) -> Dict[str, float]:
    s = sorted(samples_ns)
    n = len(s)
    return {"p50_ns": round(s[n // 2], 1), "p99_ns": round(s[min(n - 1, int(n * 0.99))], 1),
            "mean_ns": round(statistics.fmean(s), 1), "calls": n}


def timer_overhead_ns(n: int = 200_000) -> float:
    pc = time.perf_counter_ns
    samples = []
    for _ in range(n):
        t0 = pc()
        t1 = pc()
        samples.append(t1 - t0)
    samples.sort()
    return float(samples[len(samples) // 2])


def time_log_calls(run, calls: int, overhead: float) -> Dict[str, float]:
    pc = time.perf_counter_ns
    log = run.log
    values = VALUES
    samples = [0.0] * calls
    for i in range(calls):
        t0 = pc()
        log(values)
        samples[i] = pc() - t0 - overhead
    return percentiles(samples)


def time_log_batched(run, blocks: int, block: int = 1000) -> Dict[str, float]:
    pc = time.perf_counter_ns
    log = run.log
    values = VALUES
    per_call = []
    for _ in range(blocks):
        t0 = pc()
        for _ in range(block):
            log(values)
        per_call.append((pc() - t0) / block)
    out = percentiles(per_call)
    out["calls"] = blocks * block
    return out


class Server:
    """`cohort server --port 0` in a temporary HOME (sets this process's HOME to it)."""

    def __init__(self) -> None:
        self.home = pathlib.Path(tempfile.mkdtemp(prefix="cohort-bench-"))
        binary = BUILD / "src" / "cli" / "cohort"
        if not binary.exists():
            sys.exit(f"python_log_bench: {binary} is missing; build the project first")
        env = dict(os.environ, HOME=str(self.home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
                   XDG_RUNTIME_DIR=str(self.home / "run"))
        self.proc = subprocess.Popen([str(binary), "server", "--port", "0", "--data-dir",
                                      str(self.home / "data")], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            sys.exit("python_log_bench: the server did not start")
        for k in ("HOME", "XDG_RUNTIME_DIR"):
            os.environ[k] = env[k]
        for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            os.environ.pop(k, None)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.home, ignore_errors=True)


INIT_SNIPPET = """
import json, sys, time
sys.path.insert(0, {python!r})
import cohort
t0 = time.perf_counter()
run = cohort.init(project="bench", settings=cohort.Settings(x_stats_sampling_interval=0))
t1 = time.perf_counter()
run.finish()
print(json.dumps({{"init_ms": (t1 - t0) * 1e3}}))
"""


def init_in_fresh_process() -> float:
    code = INIT_SNIPPET.format(python=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ))
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])["init_ms"]


def agent_pids() -> List[int]:
    marker = ("HOME=" + os.environ["HOME"]).encode()
    pids = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(cmd) > 1 and cmd[1] == b"agent" and marker in env:
            pids.append(int(d.name))
    return pids


def stop_agents() -> None:
    import signal
    pids = agent_pids()
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and agent_pids():
        time.sleep(0.05)


VENDOR_SNIPPET = """
import json, os, resource, sys, time
sys.path.insert(0, {python!r})
sdk, mode, steps, keys = {sdk!r}, {mode!r}, {steps}, {keys}
pc = time.perf_counter_ns
t0 = pc()
if sdk == "wandb":
    import wandb as lib
    kwargs = dict(project="bench", mode=mode, dir={workdir!r})
else:
    import cohort as lib
    kwargs = dict(project="bench", mode=mode, dir=os.path.join({workdir!r}, "cohort"))
t1 = pc()
run = lib.init(**kwargs)
t2 = pc()
overhead = sorted(-pc() + pc() for _ in range(10001))[5000]
values = {{f"metric_{{k}}": 0.1 * k for k in range(keys)}}
samples = [0] * steps
log = run.log
t3 = pc()
for i in range(steps):
    a = pc()
    log(values)
    samples[i] = pc() - a - overhead
t4 = pc()
run.finish()
t5 = pc()
ru = resource.getrusage(resource.RUSAGE_SELF)
rc = resource.getrusage(resource.RUSAGE_CHILDREN)
samples.sort()
print(json.dumps({{
    "import_ms": (t1 - t0) / 1e6, "init_ms": (t2 - t1) / 1e6,
    "log_p50_us": samples[steps // 2] / 1e3, "log_p99_us": samples[steps * 99 // 100] / 1e3,
    "log_mean_us": (t4 - t3) / steps / 1e3, "finish_ms": (t5 - t4) / 1e6,
    "cpu_s": ru.ru_utime + ru.ru_stime, "cpu_children_s": rc.ru_utime + rc.ru_stime,
    "max_rss_mb": ru.ru_maxrss / 1024}}))
"""


def vendor_once(sdk: str, mode: str, steps: int, keys: int) -> Dict[str, float]:
    workdir = tempfile.mkdtemp(prefix=f"cohort-vendor-{sdk}-")
    try:
        code = VENDOR_SNIPPET.format(python=str(ROOT / "python"), sdk=sdk, mode=mode,
                                     steps=steps, keys=keys, workdir=workdir)
        env = dict(os.environ)
        if sdk == "wandb":
            # Offline, silent, and no way out: any request would hit a closed local port.
            env.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=workdir,
                       WANDB_CONFIG_DIR=workdir, WANDB_CACHE_DIR=workdir,
                       HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
                       http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
                       NO_PROXY="", no_proxy="")
        else:
            stop_agents()  # init spawns it: the vendor's init starts its service, too
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=1800, env=env, cwd=workdir)
        if out.returncode != 0:
            raise RuntimeError(f"{sdk} ({mode}) workload failed:\n{out.stderr[-4000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def vendor_main(a: argparse.Namespace) -> Dict[str, object]:
    try:
        import wandb  # noqa: F401  (only to fail early with a clear message)
    except ImportError:
        sys.exit("python_log_bench: --vendor needs the vendor's SDK: "
                 "pip install -r python/requirements-dev.txt (wandb)")
    import wandb
    result: Dict[str, object] = {
        "python": sys.version.split()[0], "wandb": wandb.__version__,
        "workload": {"steps": a.vendor_steps, "keys": a.vendor_keys,
                     "points": a.vendor_steps * a.vendor_keys, "repeats": a.vendor_repeats},
    }
    cases = [("cohort_online", "cohort", "online"), ("cohort_offline", "cohort", "offline"),
             ("wandb_offline", "wandb", "offline")]
    runs: Dict[str, List[Dict[str, float]]] = {name: [] for name, _, _ in cases}
    server = None if a.base_url else Server()
    try:
        os.environ["COHORT_AGENT_IDLE_S"] = "30"
        for _ in range(a.vendor_repeats):  # interleaved, so that load drifts hit all alike
            for name, sdk, mode in cases:
                runs[name].append(vendor_once(sdk, mode, a.vendor_steps, a.vendor_keys))
    finally:
        stop_agents()
        if server is not None:
            server.stop()
    for name, samples in runs.items():
        result[name] = {k: round(statistics.median(s[k] for s in samples), 3)
                        for k in samples[0]}
    ours, theirs = result["cohort_online"], result["wandb_offline"]
    result["ratios"] = {k: round(theirs[k] / ours[k], 1) if ours[k] > 0 else None
                        for k in ("import_ms", "init_ms", "log_p50_us", "log_p99_us",
                                  "log_mean_us", "finish_ms", "cpu_s")}
    return result


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200_000, help="timed log calls per case")
    p.add_argument("--init-repeats", type=int, default=5)
    p.add_argument("--points", type=int, default=1_000_000, help="points before finish()")
    p.add_argument("--base-url", default=None, help="use this server instead of starting one")
    p.add_argument("--vendor", action="store_true",
                   help="the vendor's SDK (wandb, offline) and Cohort side by side instead")
    p.add_argument("--vendor-steps", type=int, default=10_000, help="log calls per workload")
    p.add_argument("--vendor-keys", type=int, default=10, help="scalars per log call")
    p.add_argument("--vendor-repeats", type=int, default=3, help="workloads per SDK")
    a = p.parse_args(argv)
    if a.vendor:
        print(json.dumps(vendor_main(a), indent=2))
        return 0

    import cohort

    result: Dict[str, object] = {"python": sys.version.split()[0], "values_per_call": 10}
    overhead = timer_overhead_ns()
    result["timer_overhead_ns"] = overhead

    run = cohort.init(mode="disabled")
    time_log_calls(run, 20_000, overhead)  # warm-up
    result["log_disabled"] = time_log_calls(run, a.calls, overhead)
    run.finish()

    server = None if a.base_url else Server()
    try:
        os.environ["COHORT_AGENT_IDLE_S"] = "30"
        stop_agents()
        cold = [init_in_fresh_process()]  # spawns the agent
        warm = [init_in_fresh_process() for _ in range(a.init_repeats)]
        for _ in range(a.init_repeats - 1):
            stop_agents()
            cold.append(init_in_fresh_process())
        result["init_cold_ms"] = round(statistics.median(cold), 2)
        result["init_warm_ms"] = round(statistics.median(warm), 2)

        run = cohort.init(project="bench", settings=cohort.Settings(
            x_stats_sampling_interval=0, console="off"))
        t0 = time.perf_counter()
        run2 = cohort.init(project="bench", reinit="create_new",
                           settings=cohort.Settings(x_stats_sampling_interval=0))
        result["init_warm_same_process_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
        run2.finish()
        time_log_calls(run, 20_000, overhead)
        result["log_online"] = time_log_calls(run, a.calls, overhead)
        result["log_online_batched"] = time_log_batched(run, max(1, a.calls // 1000))
        run.finish()

        run = cohort.init(project="bench", settings=cohort.Settings(
            x_stats_sampling_interval=0, console="off", finish_timeout=120))
        calls = a.points // len(VALUES)
        t0 = time.perf_counter()
        for _ in range(calls):
            run.log(VALUES)
        t1 = time.perf_counter()
        run.finish()
        t2 = time.perf_counter()
        result["finish_after_points"] = a.points
        result["log_1m_points_s"] = round(t1 - t0, 3)
        result["finish_after_1m_points_ms"] = round((t2 - t1) * 1e3, 1)
    finally:
        stop_agents()
        if server is not None:
            server.stop()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
