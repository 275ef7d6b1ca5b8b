"""Shared runs under a torchrun-style launch where every rank calls
`init(settings=Settings(mode="shared"))` (docs/python.md recommends it): the run's state and
summary are the primary's (rank 0's), whatever the workers do later. Real gloo ranks through
examples/launch.py against the real agent and server."""
import sys

from dist_helpers import EXAMPLES, assert_ok, client, wait_until  # noqa: F401

PROJECT = "shdef"

# argv: <raise_rank> <worker_delay_s>. Rank r logs 6 steps, rank `raise_rank` raises at step 3;
# the workers finish `worker_delay_s` after the primary's end.
JOB = """\
import os, sys, time
import torch.distributed as dist
import cohort
rank = int(os.environ["RANK"])
raise_rank, delay = int(sys.argv[1]), float(sys.argv[2])
dist.init_process_group("gloo")
run = cohort.init(project="shdef", settings=cohort.Settings(mode="shared"))
dist.barrier()
for i in range(6):
    if rank == raise_rank and i == 3:
        raise RuntimeError(f"boom on rank {rank}")
    run.log({"loss": 1.0 / (i + 1) + rank})
if rank != 0:
    time.sleep(delay)
run.finish()
"""


def _launch(client, *args):
    script = client.tmp / "job.py"
    script.write_text(JOB)
    return client.run([EXAMPLES / "launch.py", "--nproc", 3, "--keep-going", script,
                       *map(str, args)], timeout=180)


def _ended(client):
    runs = wait_until(lambda: client.runs(project=PROJECT), what="a run")
    assert len(runs) == 1, [r["id"] for r in runs]
    view = client.run_view(runs[0]["id"], project=PROJECT)
    # Every writer ended first, so that a worker's later end would have shown.
    writers = wait_until(lambda: (w := view.writers()) and len(w) == 3 and
                         all(x["state"] != "running" for x in w.values()) and w,
                         what="3 writers ended")
    return view, view.wait_state(), writers


def test_failed_primary_fails_the_run_though_the_workers_finish_later(client):
    proc = _launch(client, 0, 2.0)
    assert proc.returncode == 1, proc.stderr[-3000:]
    view, run, writers = _ended(client)
    assert (run["state"], run["exit_code"]) == ("failed", 1)  # rank 0's
    assert writers["rank_0"]["state"] == "failed"
    assert writers["rank_1"]["state"] == writers["rank_2"]["state"] == "finished"
    assert writers["rank_0"]["update_finish_state"]
    assert not writers["rank_1"]["update_finish_state"]
    assert not writers["rank_2"]["update_finish_state"]


def test_run_of_ranks_that_all_finish_is_finished(client):
    assert_ok(_launch(client, -1, 1.0))
    view, run, writers = _ended(client)
    assert {w["state"] for w in writers.values()} == {"finished"}
    assert (run["state"], run["exit_code"]) == ("finished", 0)


# Each rank sets summary["best"] = 100 + rank, the workers after the primary, and reads it back.
SUMMARY_JOB = """\
import os, time
import torch.distributed as dist
import cohort
rank = int(os.environ["RANK"])
dist.init_process_group("gloo")
run = cohort.init(project="shdef", settings=cohort.Settings(mode="shared"))
dist.barrier()
time.sleep(0.3 * rank)
run.log({"best": -1.0})
run.summary["best"] = 100 + rank
run.summary["other"] = rank
assert run.summary["best"] == 100 + rank, dict(run.summary)  # kept in this process
dist.barrier()
time.sleep(0.3 * rank)
run.finish()
"""


def test_workers_summary_writes_stay_local_and_the_server_keeps_the_primarys(client):
    script = client.tmp / "summary_job.py"
    script.write_text(SUMMARY_JOB)
    proc = assert_ok(client.run([EXAMPLES / "launch.py", "--nproc", 3, script], timeout=180))
    view, run, writers = _ended(client)
    assert run["state"] == "finished"
    assert run["summary"]["best"] == 100
    assert run["summary"]["other"] == 0
    # One warning per worker run (two keys set, warned once), none from the primary.
    warning = "stay in this process"
    assert proc.stderr.count(warning) == 2, proc.stderr[-3000:]
    assert "rank_1" in proc.stderr and "rank_2" in proc.stderr
