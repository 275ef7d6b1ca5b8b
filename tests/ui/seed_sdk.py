"""One process of the web UI's seed scenarios, written with the real Python SDK (`import cohort`).

tests/ui/seed.mjs (SdkDriver) starts one of these per rank, against a `cohort server` on port 0,
with the node agent (`cohort agent`) sampling system metrics (GPUs from tests/fake_nvml through
COHORT_NVML_LIBRARY) and capturing every print as console lines:

    python seed_sdk.py ddp RANK                 one run per process in group DDP (rank 2 crashes)
    python seed_sdk.py shared RANK RUN_ID       one shared run, a writer per rank (rank 2 crashes)
    python seed_sdk.py rank0                    only rank 0 tracks, with all four GPUs
    python seed_sdk.py live                     50 steps, then commands on stdin: `more N`,
                                                `crash` (SIGKILL), `finish`
    python seed_sdk.py slow RANK RUN_ID         a shared run of 4 ranks where rank 3 takes 4x
                                                longer per step (the straggler to be found)
    python seed_sdk.py hist RANK RUN_ID         a shared run of 2 writers logging histograms
                                                (tests/ui/histograms.test.mjs; see hist())

A crashing rank prints its error to stderr and dies by SIGKILL without finish(): the agent sees
its connection drop and reports the writer crashed, as it would for a real crash. Each process
prints `ready <run id>` once its run is initialised (the driver waits for it).
"""
import math
import os
import random
import signal
import sys
import time

import cohort

PROJECT = os.environ.get("COHORT_PROJECT", "ddp-demo")
STEPS = int(os.environ.get("SEED_STEPS", "300"))
STEP_S = float(os.environ.get("SEED_STEP_S", "0.004"))  # so the monitor samples a few times
STATS_S = float(os.environ.get("SEED_STATS_S", "0.2"))
CONFIG = {"lr": 0.1, "batch_size": 64, "optimizer": {"name": "sgd", "momentum": 0.9},
          "world_size": 4}


def die(rank):
    """A crash: the error on stderr, then SIGKILL (no finish())."""
    print(f"[rank {rank}] RuntimeError: NCCL communicator was aborted on rank {rank}",
          file=sys.stderr, flush=True)
    print("Traceback (most recent call last):", file=sys.stderr, flush=True)
    print('  File "train.py", line 88, in <module>', file=sys.stderr, flush=True)
    time.sleep(1.0)  # what was logged reaches the agent first
    os.kill(os.getpid(), signal.SIGKILL)


def train(run, rank, steps=STEPS, crash_at=None, start=0):
    """Logs loss/acc/lr (+ val/loss every 25 steps) and prints progress; returns the last values."""
    rnd = random.Random(1000 + rank * 7919)
    last = {}
    for step in range(start, steps):
        if crash_at is not None and step == crash_at:
            die(rank)
        loss = 2.3 * math.exp(-step / (60 + rank * 10)) + 0.05 + (rnd.random() - 0.5) * 0.08
        acc = min(0.99, 0.1 + 0.85 * (1 - math.exp(-step / 70)) + (rnd.random() - 0.5) * 0.02)
        lr = 0.1 * ((step + 1) / 20 if step < 20 else math.cos(math.pi / 2 * step / steps))
        values = {"loss": loss, "train/acc": acc, "train/lr": lr}
        if step % 25 == 24:
            values["val/loss"] = loss * 1.1
        run.log(values, step=step)
        last = {"loss": loss, "train/acc": acc, "train/lr": lr, "val/loss": loss * 1.1}
        if step % 20 == 0:
            print(f"[rank {rank}] epoch {step // 100} step {step} loss={loss:.4f}", flush=True)
        if step % 97 == 50:
            print(f"[rank {rank}] warning: gradient norm {5 + rnd.random() * 5:.2f} clipped",
                  file=sys.stderr, flush=True)
        time.sleep(STEP_S)
    return last


def ready(run):
    sys.__stdout__.write(f"ready {run.id}\n")
    sys.__stdout__.flush()


def ddp(rank):
    run = cohort.init(project=PROJECT, name=f"ddp-rank{rank}", group="DDP",
                      job_type="main" if rank == 0 else "worker", tags=["ddp"],
                      config={**CONFIG, "rank": rank},
                      settings=cohort.Settings(x_label=f"rank_{rank}",
                                               x_stats_gpu_device_ids=[rank % 2],
                                               x_stats_sampling_interval=STATS_S))
    ready(run)
    last = train(run, rank, crash_at=150 if rank == 2 else None)
    run.summary.update(last)
    run.finish()


def shared(rank, run_id):
    if rank == 0:
        settings = cohort.Settings(mode="shared", x_label="rank_0", x_primary=True,
                                   x_stats_gpu_device_ids=[0, 1],
                                   x_stats_sampling_interval=STATS_S)
        run = cohort.init(project=PROJECT, id=run_id, name="shared-ddp", job_type="train",
                          tags=["shared"], config=CONFIG, settings=settings)
    else:
        settings = cohort.Settings(mode="shared", x_label=f"rank_{rank}", x_primary=False,
                                   x_update_finish_state=False,
                                   x_stats_gpu_device_ids=[rank % 2],
                                   x_stats_sampling_interval=STATS_S)
        run = cohort.init(project=PROJECT, id=run_id, settings=settings)
    ready(run)
    last = train(run, rank, crash_at=120 if rank == 2 else None)
    if rank == 0:
        run.summary.update(last)
        # The primary ends last, so that the run's state is the primary's (finished).
        stop = time.monotonic() + 30
        while os.environ.get("SEED_WAIT_FILE") and os.path.exists(os.environ["SEED_WAIT_FILE"]) \
                and time.monotonic() < stop:
            time.sleep(0.05)
    run.finish()


def rank0():
    run = cohort.init(project=PROJECT, name="rank0-only", job_type="train", config=CONFIG,
                      settings=cohort.Settings(x_label="rank_0", x_stats_gpu_device_ids=[0, 1, 2, 3],
                                               x_stats_sampling_interval=STATS_S))
    ready(run)
    run.summary.update(train(run, 0))
    run.finish()


def live():
    run = cohort.init(project=PROJECT, name="live-run", job_type="train", config=CONFIG,
                      settings=cohort.Settings(x_label="rank_0", x_stats_sampling_interval=1.0))
    train(run, 0, steps=50, start=0)
    ready(run)
    step = 50
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "more":
            for _ in range(int(cmd[1])):
                run.log({"loss": 0.5}, step=step)
                step += 1
            sys.__stdout__.write(f"logged {step}\n")
            sys.__stdout__.flush()
        elif cmd[0] == "crash":
            die(0)
        elif cmd[0] == "finish":
            break
    run.finish()


def slow(rank, run_id):
    """Shared run "stragglers": every rank logs 120 steps; rank 3 sleeps 4x as long per step."""
    settings = cohort.Settings(mode="shared", x_label=f"rank_{rank}", x_primary=rank == 0,
                               x_update_finish_state=rank == 0,
                               x_stats_gpu_device_ids=[rank], x_stats_sampling_interval=STATS_S)
    if rank == 0:
        run = cohort.init(project=PROJECT, id=run_id, name="stragglers", job_type="train",
                          config=CONFIG, settings=settings)
    else:
        run = cohort.init(project=PROJECT, id=run_id, settings=settings)
    ready(run)
    pause = 0.01 * (4 if rank == 3 else 1)
    for step in range(120):
        run.log({"loss": 1.0 / (1 + step) + 0.01 * rank}, step=step)
        time.sleep(pause)
    if rank == 0:
        stop = time.monotonic() + 30
        while os.environ.get("SEED_WAIT_FILE") and os.path.exists(os.environ["SEED_WAIT_FILE"]) \
                and time.monotonic() < stop:
            time.sleep(0.05)
    run.finish()


HIST_STEPS = int(os.environ.get("SEED_HIST_STEPS", "10000"))
HIST_EDGES = [-3 + 6 * i / 48 for i in range(49)]


def hist_center(rank, step):
    """The centre of gradients/fc1.weight at a step: rank 0 drifts from -1 to 1 over its steps,
    rank 1 sits around 2 (the writer switch must show it)."""
    return -1 + 2 * step / (HIST_STEPS - 1) if rank == 0 else 2.0


def normal_counts(mu, sigma, edges, n=1000):
    """Counts of n values of N(mu, sigma) in the bins (the expected counts, rounded)."""
    cdf = [0.5 * (1 + math.erf((e - mu) / (sigma * math.sqrt(2)))) for e in edges]
    return [round(n * (cdf[i + 1] - cdf[i])) for i in range(len(edges) - 1)]


def hist(rank, run_id):
    """Shared run "hist-shared", histograms logged with cohort.Histogram through run.log:
    rank_0: gradients/fc1.weight every step for HIST_STEPS steps (fixed edges over [-3, 3], 48
    bins: merged buckets add up exactly), centre drifting from -1 to 1; parameters/fc1.weight
    from raw values (50 steps); parameters/const, every value 7.0 (20 steps: the SDK widens the
    range to [6.5, 7.5]); parameters/single at step 5 only; gradients/nan over 30 steps whose
    steps 10..19 hold only NaN (a histogram that counts nothing). rank_1: gradients/fc1.weight for
    200 steps around 2."""
    settings = cohort.Settings(mode="shared", x_label=f"rank_{rank}", x_primary=rank == 0,
                               x_update_finish_state=rank == 0, x_stats_sampling_interval=1.0)
    if rank == 0:
        run = cohort.init(project=PROJECT, id=run_id, name="hist-shared", job_type="train",
                          config=CONFIG, settings=settings)
    else:
        run = cohort.init(project=PROJECT, id=run_id, settings=settings)
    ready(run)
    steps = HIST_STEPS if rank == 0 else 200
    rnd = random.Random(7 + rank)
    for step in range(steps):
        counts = normal_counts(hist_center(rank, step), 0.5, HIST_EDGES)
        values = {"loss": 1.0 / (1 + step) + 0.01 * rank,
                  "gradients/fc1.weight": cohort.Histogram(np_histogram=(counts, HIST_EDGES))}
        if rank == 0 and step < 50:
            values["parameters/fc1.weight"] = cohort.Histogram(
                [rnd.gauss(0.1 * step, 1.0) for _ in range(200)], num_bins=32)
        if rank == 0 and step < 20:
            values["parameters/const"] = cohort.Histogram([7.0] * 100)
        if rank == 0 and step == 5:
            values["parameters/single"] = cohort.Histogram([0.5, 1.5, 1.5, 2.5], num_bins=3)
        if rank == 0 and step < 30:
            nan = 10 <= step < 20
            values["gradients/nan"] = cohort.Histogram(
                [float("nan")] * 50 if nan else [rnd.uniform(-1, 1) for _ in range(50)], num_bins=16)
        run.log(values, step=step)
    run.finish()


def main(argv):
    what = argv[1]
    if what == "ddp":
        ddp(int(argv[2]))
    elif what == "shared":
        shared(int(argv[2]), argv[3])
    elif what == "rank0":
        rank0()
    elif what == "live":
        live()
    elif what == "slow":
        slow(int(argv[2]), argv[3])
    elif what == "hist":
        hist(int(argv[2]), argv[3])
    else:
        raise SystemExit(f"seed_sdk.py: unknown scenario {what!r}")


if __name__ == "__main__":
    main(sys.argv)
