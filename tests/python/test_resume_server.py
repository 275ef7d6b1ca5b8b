"""Resuming a run of its own (not shared) with `cohort.init(id=..., resume=...)`, read back from a
real `cohort server` (real training processes, real node agent).

Each process writes under a label of its own (`<host>-<random>` by default): the server tells the
writer of the resumed run to go on after the steps of the run's earlier writers (docs/api.md,
Writers), so that its steps continue as the vendor SDK's do instead of starting again at 0, and
the resumed run shows the group, tags, config and summary the server holds (docs/python.md,
Resume).
"""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import client, wait_until  # noqa: E402,F401

PROJECT = "resume"
RUN_ID = "resumed-run"

FIRST = """
import json, cohort
run = cohort.init(project='resume', id='resumed-run', group='g1', tags=['t1', 't2'])
for i in range(5):
    run.log({'loss': 10.0 - i})
run.summary['best'] = 6.0
print(json.dumps({'label': run.label, 'step': run.step}))
run.finish()
"""

SECOND = """
import json, cohort
run = cohort.init(project='resume', id='resumed-run', resume=%r)
start = {'label': run.label, 'step': run.step, 'group': run.group, 'tags': list(run.tags),
         'summary': dict(run.summary)}
for i in range(3):
    run.log({'loss': 4.0 - i})
start['end'] = run.step
print(json.dumps(start))
run.finish()
"""


def _out(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _loss_steps(view):
    """[(step, value)] of `loss` across the run's writers, by step."""
    series = view.history(keys=["loss"])
    return sorted(p for (key, _), points in series.items() if key == "loss" for p in points)


def test_a_resumed_run_continues_its_steps_and_shows_its_fields(client):
    first = _out(client.python(FIRST))
    assert first["step"] == 5
    view = client.run_view(RUN_ID, project=PROJECT)
    wait_until(lambda: len(_loss_steps(view)) == 5, what="the first process's points")

    second = _out(client.python(SECOND % "allow"))
    assert second["step"] == 5, second  # it started at 0 under a new writer
    assert second["end"] == 8
    assert second["label"] != first["label"]  # a writer of its own, as before
    assert second["group"] == "g1"
    assert second["tags"] == ["t1", "t2"]
    assert second["summary"].get("best") == 6.0

    steps = wait_until(lambda: (s := _loss_steps(view)) and len(s) == 8 and s,
                       what="the second process's points")
    # One curve: steps 0..7, none twice.
    assert steps == [(i, 10.0 - i) for i in range(5)] + [(5 + i, 4.0 - i) for i in range(3)]
    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    assert run["group"] == "g1" and run["tags"] == ["t1", "t2"]

    # A third process (resume="must") goes on after both.
    third = _out(client.python(SECOND % "must"))
    assert (third["step"], third["end"]) == (8, 11)


def test_a_run_resumed_after_its_process_was_killed_continues_its_steps(client):
    """A preempted process never finishes its writer: it is still running (until the server's
    heartbeat timeout) when the job starts again. Its steps go on all the same."""
    killed = client.python(FIRST.replace("run.finish()", "import os, time\n"
                                         "time.sleep(1)\nos.kill(os.getpid(), 9)\n"))
    assert killed.returncode == -9, killed.stderr[-3000:]
    view = client.run_view(RUN_ID, project=PROJECT)
    wait_until(lambda: len(_loss_steps(view)) == 5, what="the killed process's points")

    second = _out(client.python(SECOND % True))
    assert (second["step"], second["end"]) == (5, 8), second
    steps = wait_until(lambda: (s := _loss_steps(view)) and len(s) == 8 and s,
                       what="the second process's points")
    assert [s for s, _ in steps] == list(range(8))


def test_the_ranks_of_a_shared_run_launched_without_torchrun_keep_their_own_steps(client):
    """Without torchrun every writer of a shared run is primary (docs/python.md): a rank that
    joins after another must not start after the other's steps (rank comparison lines them up
    step by step)."""
    rank = """
import json, cohort
run = cohort.init(project='resume', id='shared-run', mode='shared',
                  settings=cohort.Settings(x_label=%r))
start = run.step
for i in range(%d):
    run.log({'loss': float(i)})
print(json.dumps({'start': start, 'end': run.step}))
run.finish()
"""
    first = _out(client.python(rank % ("node_a", 4)))
    assert (first["start"], first["end"]) == (0, 4)
    second = _out(client.python(rank % ("node_b", 2)))
    assert (second["start"], second["end"]) == (0, 2), second


CONFIG_FIRST = """
import cohort
run = cohort.init(project='resume', id='with-config',
                  config={'lr': 0.1, 'opt': {'name': 'adam'}, 'seed': None})
run.config['epochs'] = 3
run.finish()
"""

CONFIG_AGAIN = """
import json, cohort
sent = []
send = cohort.Run._update_config
cohort.Run._update_config = lambda self, text: (sent.append(json.loads(text)), send(self, text))
run = cohort.init(project='resume', id='with-config', resume=%r, config={'batch': 32})
seen = dict(run.config)
run.config['lr'] = 0.05
print(json.dumps({'config': seen, 'sent': sent}))
run.finish()
"""


def test_a_resumed_run_reads_its_config_back_without_sending_it(client):
    assert client.python(CONFIG_FIRST).returncode == 0
    view = client.run_view("with-config", project=PROJECT)
    view.wait_state()
    for resume in ("allow", "must", "auto"):
        out = _out(client.python(CONFIG_AGAIN % resume))
        assert out["config"] == {"lr": 0.1 if resume == "allow" else 0.05,
                                 "opt": {"name": "adam"}, "seed": None, "epochs": 3,
                                 "batch": 32}, (resume, out)
        # Only the assignment was sent: the keys read back were not.
        assert out["sent"] == [{"lr": 0.05}], (resume, out)
        # The next process reads what this one left.
        run = wait_until(lambda: (r := view.get())["state"] == "finished" and
                         r["config"].get("lr") == 0.05 and r, what="the resumed run's config")
        assert run["config"] == {"lr": 0.05, "opt": {"name": "adam"}, "seed": None,
                                 "epochs": 3, "batch": 32}
