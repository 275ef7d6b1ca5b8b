"""run.summary against a real `cohort server` (real training process, real node agent): reads
see the last logged value of each key, and the last write of a key -- a log or an assignment --
is the one the run's summary keeps, in the process and on the server (the seed SDK's rule)."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import assert_ok, client  # noqa: E402,F401

PROJECT = "summary"
HEADER = "import cohort, json\n"


def _ended_run(client):
    return client.only_run(project=PROJECT).wait_state(("finished",))


def test_reads_of_run_summary_see_the_last_logged_values(client):
    # They raised KeyError: the local dict held only what the script assigned.
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r})\n"
        "run.log({'acc': 0.7, 'loss': 2.0})\n"
        "run.log({'acc': 0.8, 'loss': 1.0})\n"
        "run.summary['best'] = 0.95\n"
        "s = run.summary\n"
        "print(json.dumps({'getitem': s['acc'], 'get': s.get('loss'), 'attr': s.acc,\n"
        "                  'keys': sorted(s.keys()), 'items': sorted(s.items()),\n"
        "                  'iter': sorted(s), 'len': len(s), 'in': 'acc' in s,\n"
        "                  'dict': dict(s), 'module': cohort.summary['acc']}), flush=True)\n"
        "del run.summary['loss']\n"
        "print(json.dumps(sorted(run.summary)), flush=True)\n"
        "run.finish()\n"
        "print(json.dumps(dict(run.summary)), flush=True)\n")))
    first, after_del, after_finish = [json.loads(line) for line in proc.stdout.splitlines()]
    assert first == {"getitem": 0.8, "get": 1.0, "attr": 0.8, "keys": ["acc", "best", "loss"],
                     "items": [["acc", 0.8], ["best", 0.95], ["loss", 1.0]],
                     "iter": ["acc", "best", "loss"], "len": 3, "in": True,
                     "dict": {"best": 0.95, "acc": 0.8, "loss": 1.0}, "module": 0.8}, first
    assert after_del == ["acc", "best"]
    assert after_finish == {"best": 0.95, "acc": 0.8}
    run = _ended_run(client)
    assert run["summary"] == {"acc": 0.8, "best": 0.95}, run["summary"]


def test_the_last_write_of_a_key_wins_log_or_assignment(client):
    # An assigned key was never overwritten by later logs: the server kept 2.
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r})\n"
        "run.log({'A': 1, 'B': 1})\n"
        "run.summary['A'] = 2\n"
        "run.summary['B'] = 5\n"
        "print(run.summary['A'], run.summary['B'], flush=True)\n"
        "run.log({'A': 3})\n"
        "print(run.summary['A'], run.summary['B'], flush=True)\n"
        "run.finish()\n")))
    assert proc.stdout.split() == ["2", "5", "3.0", "5"], proc.stdout
    run = _ended_run(client)
    assert run["summary"]["A"] == 3.0 and run["summary"]["B"] == 5, run["summary"]


def test_changes_after_finish_raise_a_usage_error_naming_what_changed(client):
    # The message was the format string itself ("%.*s: this run is finished").
    proc = assert_ok(client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r})\n"
        "run.finish()\n"
        "for change in (lambda: run.summary.__setitem__('x', 1),\n"
        "               lambda: run.config.__setitem__('lr', 1), lambda: setattr(run, 'notes', 'n'),\n"
        "               lambda: setattr(run, 'tags', ['t'])):\n"
        "    try:\n"
        "        change()\n"
        "    except cohort.UsageError as e:\n"
        "        print(e, flush=True)\n")))
    assert proc.stdout.splitlines() == [
        "summary: this run is finished", "config: this run is finished",
        "notes: this run is finished", "tags: this run is finished"], proc.stdout
