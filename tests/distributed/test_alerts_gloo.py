"""The `hung` rule on a real torch.distributed job (issue 16): three gloo ranks on CPU of one
shared run, each step a real all_reduce, through the real SDK, agent and server (sweeping every
second).

- A rank stopped with SIGSTOP before it logs its next step: the two others log that step (a
  long one, 3 s) and wait inside the all_reduce for it. Every process is alive and heartbeating.
  First the stopped rank alone is hung (the others advanced since); once no step advanced
  anywhere for the rule's minimum, one run-level alert opens (within a few sweeps) naming the
  stopped rank as the one behind the others; it resolves after SIGCONT, when the steps advance
  again, and the ranks finish cleanly. The stopped rank's own alert stays open until it
  advances (it used to be resolved when the run-level one opened).
- The same job in a long evaluation (every rank sleeps, then a barrier), much longer than the
  rule's factor x the job's step time but shorter than its minimum: no alert.

Ranks are started as torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), not by
torchrun, which crashes on Debian's Python 3.11. ~55 s for the file on 2 cores.
"""
import os
import pathlib
import signal
import subprocess
import time
import uuid

import pytest

from conftest import ServerProcess
from dist_helpers import Client, free_port, wait_until

PROJECT = "gloo-hangs"
WORLD = 3
VICTIM = "rank_1"

JOB = r"""
import argparse, os, pathlib, time
import torch
import torch.distributed as dist
import cohort

p = argparse.ArgumentParser()
p.add_argument("--run", required=True)
p.add_argument("--dir", required=True)       # ready / release / stop files
p.add_argument("--step-s", type=float, default=0.05)
p.add_argument("--hold-rank", type=int, default=-1)
p.add_argument("--hold-at", type=int, default=-1)
p.add_argument("--eval-at", type=int, default=-1)
p.add_argument("--eval-s", type=float, default=0.0)
p.add_argument("--slow-s", type=float, default=0.0)  # the others' work at --hold-at
a = p.parse_args()
d = pathlib.Path(a.dir)

dist.init_process_group(backend="gloo")
rank = dist.get_rank()
run = cohort.init(project="{project}", id=a.run, settings=cohort.Settings(
    mode="shared", x_label=f"rank_{{rank}}", x_primary=rank == 0,
    x_update_finish_state=rank == 0))
deadline = time.monotonic() + 150  # never run on if the test is gone
step = 0
while True:
    time.sleep(a.step_s)  # this rank's work for the step
    if rank != a.hold_rank and step == a.hold_at:
        time.sleep(a.slow_s)  # a long step of the others: they log it well after rank_1 stopped
    if rank == a.hold_rank and step == a.hold_at:
        # The test stops this rank here (SIGSTOP), before it logs this step.
        (d / "ready").write_text(str(os.getpid()))
        while not (d / "release").exists():
            time.sleep(0.02)
    run.log({{"loss": 1.0 / (step + 1)}})
    grad = torch.ones(1024)
    # rank 0 asks every rank to stop after this step: all leave the loop at the same step.
    grad[0] = 1.0 if rank == 0 and ((d / "stop").exists() or time.monotonic() > deadline) else 0.0
    dist.all_reduce(grad)
    if step == a.eval_at:  # an evaluation: every rank, no step for a while
        time.sleep(a.eval_s)
        dist.barrier()
    step += 1
    if grad[0] > 0:
        break
dist.barrier()
run.finish()
dist.destroy_process_group()
print("done", rank, step)
"""


class Job:
    """The ranks of one job, each a `python job.py` process with torchrun's variables."""

    def __init__(self, client, name, **args):
        self.client = client
        self.run_id = f"{name}-{uuid.uuid4().hex[:6]}"
        self.dir = client.tmp / self.run_id
        self.dir.mkdir()
        script = client.tmp / "gloo_job.py"
        script.write_text(JOB.format(project=PROJECT))
        argv = [script, "--run", self.run_id, "--dir", self.dir]
        for k, v in args.items():
            argv += ["--" + k.replace("_", "-"), v]
        port = free_port()
        self.procs = {
            f"rank_{r}": client.popen(argv, env={
                "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(WORLD),
                "LOCAL_WORLD_SIZE": str(WORLD), "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port)})
            for r in range(WORLD)}
        self.view = client.run_view(self.run_id, project=PROJECT)

    def pid(self, label):
        return self.procs[label].pid

    def last_steps(self):
        """{writer: highest step of `loss` the server has}"""
        return {w: pts[-1][0] for (k, w), pts in self.view.history(keys=["loss"]).items() if pts}

    def alive(self):
        return all(p.poll() is None for p in self.procs.values())

    def finish(self, timeout=60):
        """Asks the ranks to stop and waits for them; every rank must exit 0."""
        (self.dir / "stop").write_text("")
        (self.dir / "release").write_text("")
        outs = {}
        for label, p in self.procs.items():
            try:
                outs[label] = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"{label} did not finish")
        for label, p in self.procs.items():
            assert p.returncode == 0, (label, p.returncode, outs[label])
            assert "done" in outs[label][0], (label, outs[label])

    def kill(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
        for p in self.procs.values():
            try:
                p.communicate(timeout=10)
            except (subprocess.TimeoutExpired, ValueError):
                pass


@pytest.fixture
def client(tmp_path):
    server = ServerProcess(tmp_path / "srv", ["--sweep-interval", "1"]).start()
    c = Client(server, tmp_path)
    c.jobs = []
    yield c
    for job in c.jobs:
        job.kill()
    c.stop_agents()
    server.stop()


def start_job(client, name, **args):
    job = Job(client, name, **args)
    client.jobs.append(job)
    return job


def hung_rule(client, min_minutes, factor=5):
    status, rule = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": "rank hung", "kind": "hung",
        "spec": {"factor": factor, "min_minutes": min_minutes}, "level": "ERROR"})
    assert status == 201, rule
    return rule


def alerts(client, **query):
    return client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}", **query)["alerts"]


def proc_state(pid):
    return pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]


def stop_victim(client, job, hold_at):
    """Waits until rank_1 holds before logging `hold_at` and the others logged it (they then
    wait for rank_1 inside the all_reduce), everything logged so far at the server; stops
    rank_1 with SIGSTOP. Returns the writers' last steps."""
    others = [f"rank_{r}" for r in range(WORLD) if f"rank_{r}" != VICTIM]
    wait_until(lambda: (job.dir / "ready").exists() or not job.alive(), timeout=90,
               what="rank_1 at the step where it is stopped")
    assert job.alive()
    want = {VICTIM: hold_at - 1, **{w: hold_at for w in others}}
    wait_until(lambda: job.last_steps() == want, timeout=30,
               what=lambda: f"steps {want} at the server (got {job.last_steps()})")
    os.kill(job.pid(VICTIM), signal.SIGSTOP)
    wait_until(lambda: proc_state(job.pid(VICTIM)) == "T", timeout=5, what="rank_1 stopped")
    return want


def rule_alerts(client, rule, job, writer):
    return [a for a in alerts(client, run=job.run_id)
            if a["rule_id"] == rule["id"] and a["writer"] == writer]


def test_a_rank_stopped_while_the_others_wait_in_all_reduce_is_a_hung_run(client):
    rule = hung_rule(client, min_minutes=0.1)  # 6 s; the job's step time is ~0.05-0.2 s
    hold_at = 30
    # The others' step `hold_at` takes 3 s: they log it ~3 s after rank_1's last step.
    job = start_job(client, "stop", hold_rank=1, hold_at=hold_at, step_s=0.05, slow_s=3)
    want = stop_victim(client, job, hold_at)

    # First rank_1 alone: stalled past the minimum while the others advanced since.
    w = wait_until(lambda: rule_alerts(client, rule, job, VICTIM), timeout=30,
                   what="the writer-level hung alert")
    assert len(w) == 1, w
    w = w[0]
    assert (w["title"], w["level"]) == ("writer rank_1 hung", "ERROR"), w
    assert "while other writers advanced" in w["text"], w
    assert [(x["writer"], x["last_step"]) for x in w["evidence"]["writers"]] == \
        [(VICTIM, hold_at - 1)], w
    assert 6000 < w["opened_ms"] - w["evidence"]["writers"][0]["last_step_ms"] <= 6000 + 4000, w

    # Then no live writer advanced for the minimum: one run-level alert naming rank_1.
    found = wait_until(lambda: rule_alerts(client, rule, job, ""), timeout=30,
                       what="the run-level hung alert")
    assert len(found) == 1, found
    a = found[0]
    assert a["state"] == "open" and a["level"] == "ERROR", a
    assert a["title"] == f"run {job.run_id} hung"
    assert a["opened_ms"] > w["opened_ms"]
    ev = a["evidence"]
    assert ev["suspects"] == [VICTIM], a
    assert "behind the others: rank_1" in a["text"], a
    assert ev["threshold_ms"] == 6000, a
    assert ev["stalled_ms"] > 6000, a
    assert 0 < ev["step_time_ms"] < 2000, a
    writers = {x["writer"]: x for x in ev["writers"]}
    assert {x: y["last_step"] for x, y in writers.items()} == want, a
    # Opened once the minimum passed since the last step anywhere, within a few 1 s sweeps
    # (server clock on both sides).
    last_advance = max(x["last_step_ms"] for x in writers.values())
    assert 6000 < a["opened_ms"] - last_advance <= 6000 + 4000, (a["opened_ms"], last_advance)
    # Nothing moved meanwhile: every rank alive, the others still waiting in all_reduce.
    assert job.alive() and job.last_steps() == want
    # A waiting rank is never blamed on its own (the stopped one's own alert: the test below).
    assert {x["writer"] for x in alerts(client) if x["rule_id"] == rule["id"]} == {"", VICTIM}

    (job.dir / "release").write_text("")
    os.kill(job.pid(VICTIM), signal.SIGCONT)
    resolved = wait_until(lambda: [x for x in alerts(client, state="resolved")
                                   if x["id"] == a["id"]], timeout=30,
                          what="the hung alert resolved")[0]
    assert resolved["resolved_ms"] >= a["opened_ms"]
    wait_until(lambda: all(s > hold_at + 5 for s in job.last_steps().values()), timeout=30,
               what="every rank stepping again")
    job.finish()
    writers = wait_until(lambda: (x := job.view.writers()) and
                         all(y["state"] == "finished" for y in x.values()) and x,
                         what="every writer finished")
    assert sorted(writers) == ["rank_0", "rank_1", "rank_2"]
    # No alert of any rule is open, and the hung rule never blamed a waiting rank.
    assert alerts(client, state="open") == []
    assert {x["writer"] for x in alerts(client) if x["rule_id"] == rule["id"]} == {"", VICTIM}


# Was an engine bug: when every live writer had stalled, only the run was found, and the stopped
# writer's own alert was resolved though it never advanced (a false 'resolved' to the webhooks).
def test_the_stopped_rank_s_alert_stays_open_until_it_advances(client):
    rule = hung_rule(client, min_minutes=0.075)  # 4.5 s
    hold_at = 20
    job = start_job(client, "flap", hold_rank=1, hold_at=hold_at, step_s=0.05, slow_s=2)
    stop_victim(client, job, hold_at)
    wait_until(lambda: rule_alerts(client, rule, job, VICTIM), timeout=30,
               what="the writer-level hung alert")
    wait_until(lambda: rule_alerts(client, rule, job, ""), timeout=30,
               what="the run-level hung alert")
    still_stopped = job.last_steps()[VICTIM] == hold_at - 1
    states = [x["state"] for x in rule_alerts(client, rule, job, VICTIM)]
    (job.dir / "release").write_text("")
    os.kill(job.pid(VICTIM), signal.SIGCONT)
    job.finish()
    assert still_stopped
    assert states == ["open"], states


def test_a_long_evaluation_of_every_rank_shorter_than_the_minimum_is_not_hung(client):
    # factor x step time is well under a second; the evaluation lasts 5 s, the minimum 12 s.
    rule = hung_rule(client, min_minutes=0.2)
    eval_at, eval_s = 20, 5.0
    job = start_job(client, "eval", eval_at=eval_at, eval_s=eval_s, step_s=0.05)
    wait_until(lambda: (s := job.last_steps()) and len(s) == WORLD and
               all(x >= eval_at for x in s.values()), timeout=90, what="every rank at the eval")
    t_eval = time.monotonic()
    # Past the evaluation: every rank well beyond it (so every sweep during it has run).
    wait_until(lambda: (s := job.last_steps()) and all(x > eval_at + 20 for x in s.values()),
               timeout=60, what="steps after the evaluation")
    assert time.monotonic() - t_eval >= eval_s - 2  # the evaluation did pause the job
    job.finish()
    assert [x for x in alerts(client) if x["rule_id"] == rule["id"]] == []
    assert alerts(client, state="open") == []
