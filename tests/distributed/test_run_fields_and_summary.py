"""Run fields assigned after init and the last-value summary, from a Python training process
through the real agent and server, read back through the API."""
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

HEADER = "import cohort\n"


def only_run(client):
    runs = wait_until(lambda: client.runs(project="fields"), what="a run")
    assert len(runs) == 1
    return client.run_view(runs[0]["id"], project="fields")


def ended(view):
    return wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="run ended")


def test_summary_keeps_the_last_write_of_each_key_logged_or_set(client):
    assert_ok(client.python(HEADER + (
        "run = cohort.init(project='fields')\n"
        "for i in range(50):\n"
        "    run.log({'loss': 50.0 - i, 'acc': {'top1': i / 100}, 'epoch': i // 10})\n"
        "run.summary['acc/top1'] = 0.9\n"
        "run.summary['best'] = 1.5\n"
        "run.log({'acc': {'top1': 0.01}, 'diverged': float('nan')})\n"
        "run.finish()\n")))
    summary = ended(only_run(client))["summary"]
    assert summary["loss"] == 1.0
    assert summary["epoch"] == 4
    assert summary["acc/top1"] == 0.01  # set by the script, then logged again: the last wins
    assert summary["best"] == 1.5  # set by the script and never logged
    assert summary["diverged"] == "NaN"  # JSON has no NaN (and null would delete the key)


def test_name_tags_notes_group_and_job_type_assigned_after_init_reach_the_run(client):
    proc = assert_ok(client.python(HEADER + (
        "run = cohort.init(project='fields', name='first', tags=['a'])\n"
        "run.log({'x': 1})\n"
        "run.name = 'second'\n"
        "run.tags = ['b', 'c']\n"
        "run.notes = 'what changed'\n"
        "run.group = 'g'\n"
        "run.job_type = 'eval'\n"
        "print('local', run.name, ','.join(run.tags), run.notes)\n"
        "try:\n"
        "    run.name = ''\n"
        "except cohort.UsageError as e:\n"
        "    print('error', e)\n"
        "try:\n"
        "    run.tags = 'not-a-list'\n"
        "except TypeError as e:\n"
        "    print('error', e)\n"
        "run.finish()\n")))
    assert "local second b,c what changed" in proc.stdout
    assert "error run: name: must be 1..256 bytes" in proc.stdout
    assert "error tags: expected a sequence of str" in proc.stdout
    run = ended(only_run(client))
    assert run["name"] == "second"
    assert run["tags"] == ["b", "c"]
    assert run["notes"] == "what changed"
    assert run["group"] == "g"
    assert run["job_type"] == "eval"
