"""Rank insight end to end (issue 8): a real torch.distributed job (3 gloo ranks on CPU) through
the real SDK, agent and server, in four phases, each its own shared run: one rank is slowed on
purpose (a sleep in its loop) and the server's /ranks/stragglers route must flag that rank and
only it, and nobody in the phase without a slowdown. /ranks/aggregate is checked against the raw
history of the same run, and over a group of runs ingested through the HTTP API.

One job for all phases (torch starts once): ~20-40 s of CI time depending on load.
"""
import statistics
import types
import uuid

import pytest

from conftest import ServerProcess
from dist_helpers import EXAMPLES, Client, client, wait_until  # noqa: F401
from ranks_checks import (check_gpu_utilisation, check_group_aggregate,
                          check_window_of_keys_that_end_apart)

STEPS = 30

JOB = r"""
import argparse
import os
import time

import torch
import torch.distributed as dist

import cohort

# name: (where the collective is, slow rank, extra seconds per step, steps, log perf/step_time)
PHASES = [
    ("live", "none", 0, 0.10, 40, False),
    ("lag", "log-then-allreduce", 2, 0.08, 30, False),
    ("uniform", "log-then-allreduce", -1, 0.0, 30, False),
    ("explicit", "allreduce-then-log", 1, 0.08, 30, True),
]
BASE = 0.03  # seconds of work per step, every rank

p = argparse.ArgumentParser()
p.add_argument("--token", required=True)
p.add_argument("--hold-file", required=True)
a = p.parse_args()

dist.init_process_group(backend="gloo")
rank = dist.get_rank()
grad = torch.ones(256)
for name, sync, slow, delay, steps, explicit in PHASES:
    run = cohort.init(project=name, id=name + a.token,
                      settings=cohort.Settings(mode="shared", x_label=f"rank_{rank}",
                                               x_primary=rank == 0,
                                               x_update_finish_state=rank == 0))
    dist.barrier()
    for step in range(steps):
        t0 = time.perf_counter()
        time.sleep(BASE + (delay if rank == slow else 0.0))  # this rank's own work
        values = {"loss": float(rank + 1) / (step + 1)}
        if explicit:
            values["perf/step_time"] = time.perf_counter() - t0
        if sync == "log-then-allreduce":
            run.log(values)
            dist.all_reduce(grad)
        elif sync == "allreduce-then-log":
            dist.all_reduce(grad)
            run.log(values)
        else:
            run.log(values)
    if name == "live":  # the test looks while every rank still runs (30 s at most)
        deadline = time.monotonic() + 30
        while os.path.exists(a.hold_file) and time.monotonic() < deadline:
            time.sleep(0.05)
    dist.barrier()
    run.finish()
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The server, and the 3-rank job started once for the whole module."""
    home = tmp_path_factory.mktemp("ranks")
    server = ServerProcess(home).start()
    client = Client(server, home)
    hold = home / "hold"
    hold.write_text("")
    script = home / "straggler_job.py"
    script.write_text(JOB)
    token = uuid.uuid4().hex[:8]
    proc = client.popen([EXAMPLES / "launch.py", "--nproc", 3, script, "--token", token,
                         "--hold-file", hold])
    yield types.SimpleNamespace(client=client, proc=proc, hold=hold, token=token)
    hold.unlink(missing_ok=True)
    try:
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        client.stop_agents()
        server.stop()


def _path(job, phase):
    return f"/api/v1/runs/{job.client.entity}/{phase}/{phase}{job.token}"


def _stragglers(client, path, **query):
    body = client.get(path + "/ranks/stragglers", missing=True, **query)
    return body or {"members": [], "stragglers": [], "desync": {"flagged": False}}


def _settled(job, phase, steps=STEPS):
    """The phase's stragglers answer once every rank's last step has reached the server."""
    path = _path(job, phase)

    def done():
        body = _stragglers(job.client, path)
        return len(body["members"]) == 3 and \
            all(m["last_step"] == steps - 1 for m in body["members"]) and body
    return path, wait_until(done, timeout=120, what=f"all 3 ranks' steps of phase {phase}")


def _flagged(body):
    return [body["members"][i]["writer"] for i in body["stragglers"]]


def test_unsynchronised_slow_rank_is_flagged_live_with_the_job_desynchronised(job):
    # Phase "live": no collective in the loop; rank_0 takes 130 ms a step, the others 30 ms.
    path = _path(job, "live")
    try:
        def flagged_live():
            body = _stragglers(job.client, path)
            ranks = {m["writer"]: m for m in body["members"]}
            return (len(ranks) == 3 and ranks["rank_0"]["state"] == "running" and
                    body["stragglers"] and body["desync"]["flagged"] and body)
        body = wait_until(flagged_live, timeout=90, what="rank_0 flagged while running")
    finally:
        job.hold.unlink(missing_ok=True)
    assert _flagged(body) == ["rank_0"], body
    assert body["members"][0]["step_time"]["flagged"]
    assert body["members"][0]["step_time"]["ratio"] > 1.5
    assert body["desync"]["behind"] == 0 and body["desync"]["step_gap"] >= 10


def test_slow_rank_logging_before_the_collective_is_the_only_one_flagged(job):
    _, body = _settled(job, "lag")
    assert body["key"] == "loss"
    assert _flagged(body) == ["rank_2"], body
    slow = body["members"][2]
    # Every rank has the same period (the collective), so the step time does not tell; the
    # slow rank reaches every step ~80 ms after the others.
    assert slow["lag"]["flagged"] and slow["lag"]["value"] > 40, slow
    assert any(r.startswith("lag: ") for r in slow["reasons"]), slow
    assert slow["step_time"]["source"] == "timestamps"
    assert not body["desync"]["flagged"], body["desync"]
    # The heatmap: 3 rows, step times near the job's period (~110 ms) where a step advanced.
    m = body["matrix"]
    assert len(m["step_time_ms"]) == 3 and len(m["times"]) == len(m["step_time_ms"][0])
    cells = [v for row in m["step_time_ms"] for v in row if v is not None]
    assert cells and 60 < statistics.median(cells) < 400, m


def test_uniform_job_flags_nobody_and_aggregates_like_the_raw_history(job):
    client = job.client
    path, body = _settled(job, "uniform")
    assert body["stragglers"] == [], body
    assert not any(m["flagged"] for m in body["members"])
    assert not body["desync"]["flagged"]

    # Aggregate "loss" across the 3 ranks: 30 steps fit 1,000 buckets, so one step per bucket.
    agg = client.get(path + "/ranks/aggregate", key="loss", per_member=1)
    assert [m["writer"] for m in agg["members"]] == ["rank_0", "rank_1", "rank_2"]
    assert agg["exact"] is True and agg["bucket_width"] == 1
    hist = client.get(path + "/history", keys="loss")["series"]
    by_step = {}
    for s in hist:
        for step, _, value in s["points"]:
            by_step.setdefault(step, {})[s["writer"]] = value
    assert len(agg["buckets"]) == STEPS
    for b in agg["buckets"]:
        vals = by_step[b["step_min"]]
        ordered = [vals["rank_0"], vals["rank_1"], vals["rank_2"]]
        assert b["members"] == 3 and b["count"] == 3
        assert b["min"] == min(ordered) and b["max"] == max(ordered)
        assert b["min_member"] == 0 and b["max_member"] == 2  # loss = (rank + 1) / (step + 1)
        assert b["median"] == statistics.median(ordered)
        assert abs(b["mean"] - sum(ordered) / 3) < 1e-12
        assert b["spread"] == max(ordered) - min(ordered)
        assert b["values"] == ordered
    # A writer filter narrows the members.
    two = client.get(path + "/ranks/aggregate", key="loss", writers="rank_0,rank_1")
    assert [m["writer"] for m in two["members"]] == ["rank_0", "rank_1"]
    assert all(b["max_member"] == 1 for b in two["buckets"])


def test_slow_rank_in_lockstep_is_flagged_by_its_explicit_step_time(job):
    # The usual DDP loop logs after the collective: every rank logs at the same moment, so only
    # the rank's own measured work (perf/step_time) can tell who the others wait for.
    _, body = _settled(job, "explicit")
    assert _flagged(body) == ["rank_1"], body
    slow = body["members"][1]
    assert slow["step_time"]["source"] == "perf/step_time" and slow["step_time"]["flagged"]
    assert slow["step_time"]["ratio"] > 2, slow
    assert body["matrix"]["step_time_source"] == "perf/step_time"


def test_every_phase_of_the_job_exits_cleanly(job):
    job.hold.unlink(missing_ok=True)
    out, err = job.proc.communicate(timeout=180)
    assert job.proc.returncode == 0, f"{out[-2000:]}\n{err[-4000:]}"


def test_ranks_routes_reject_bad_parameters(client):
    api = client.api
    base = f"/api/v1/runs/{client.entity}/nope/nope/ranks"
    status, body = api.get(base + "/aggregate?key=loss")
    assert status == 404, body
    status, body = api.get(f"/api/v1/groups/{client.entity}/p/ranks/aggregate?key=loss")
    assert status == 400 and "group" in body["error"]["message"], body
    status, body = api.get(f"/api/v1/groups/{client.entity}/p/ranks/aggregate?group=g")
    assert status == 400 and "key" in body["error"]["message"], body
    status, body = api.get(f"/api/v1/groups/{client.entity}/p/ranks/stragglers?group=g&z=-1")
    assert status == 400 and "z" in body["error"]["message"], body
    status, body = api.get(
        f"/api/v1/groups/{client.entity}/p/ranks/aggregate?group=g&key=x&buckets=0")
    assert status == 400 and "buckets" in body["error"]["message"], body
    # An empty group is no error: no members, no buckets.
    status, body = api.get(f"/api/v1/groups/{client.entity}/p/ranks/aggregate?group=g&key=x")
    assert status == 200 and body["members"] == [] and body["buckets"] == [], body


def test_group_aggregate_spans_its_runs_and_a_chosen_writer(client):
    # One run per process (the seed's second way), plus an evaluation writer in each run.
    check_group_aggregate(client.api, client.entity)


def test_rank_with_an_idle_gpu_is_flagged_by_its_utilisation(client):
    check_gpu_utilisation(client.api, client.entity)


def test_a_members_window_is_the_last_steps_of_each_of_its_keys(client):
    check_window_of_keys_that_end_apart(client.api, client.entity)

