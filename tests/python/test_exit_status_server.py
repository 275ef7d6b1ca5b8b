"""The exit code and state a run ends with when the script leaves it to the package's atexit
hook, read back from a real `cohort server` (real training processes, real node agent).

Python tells an atexit handler nothing of the exit status; the package records the code given
to sys.exit()/exit()/quit() in the main thread and the uncaught exception (sys.excepthook), and
looks at how the main thread's outermost frame ended: a program that returned exits 0 whatever
sys.exit() calls it caught. A `raise SystemExit(n)` written out is seen by no hook (CPython
reads its code before sys.excepthook and clears it before atexit): the run ends with exit code
0 and the package says so on stderr (docs/python.md, "Exit").
"""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import client, wait_until  # noqa: E402,F401

PROJECT = "exit"
HEADER = "import os, sys, threading\nimport cohort\n"
INIT = "run = cohort.init(project='exit')\nrun.log({'a': 1})\n"
UNSEEN = "the program ended by a SystemExit no hook sees"


def _ended_run(client):
    """The project's one run, once it ended."""
    return client.only_run(project=PROJECT).wait_state()


@pytest.mark.parametrize("ending,status,exit_code,state", [
    ("sys.exit(3)", 3, 3, "failed"),
    ("sys.exit('boom')", 1, 1, "failed"),
    ("sys.exit(0)", 0, 0, "finished"),
    ("sys.exit()", 0, 0, "finished"),
    ("exit(4)", 4, 4, "failed"),
    # from a function, as scripts do (`if __name__ == "__main__": sys.exit(main())`)
    ("def main():\n    return 5\nsys.exit(main())", 5, 5, "failed"),
    ("raise ValueError('boom')", 1, 1, "failed"),
    # a hook installed after init() that does not chain (rich.traceback.install() and others)
    ("sys.excepthook = lambda *a: None\nraise ValueError('boom')", 1, 1, "failed"),
])
def test_the_run_ends_with_the_exit_status_given_to_sys_exit(client, ending, status, exit_code,
                                                              state):
    proc = client.python(HEADER + INIT + ending + "\n")
    assert proc.returncode == status, proc.stderr[-3000:]
    run = _ended_run(client)
    assert (run["state"], run["exit_code"]) == (state, exit_code)
    assert UNSEEN not in proc.stderr


def test_a_sys_exit_caught_by_the_program_does_not_fail_the_run(client):
    """The program goes on after catching SystemExit (argparse errors, a framework's exit) and
    ends normally: the process exits 0, so the run is finished, not failed with the code."""
    proc = client.python(HEADER + INIT + (
        "try:\n"
        "    sys.exit(3)\n"
        "except SystemExit:\n"
        "    pass\n"
        "run.log({'a': 2})\n"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _ended_run(client)
    assert (run["state"], run["exit_code"]) == ("finished", 0)


def test_sys_exit_in_another_thread_does_not_fail_the_run(client):
    """sys.exit() in a thread ends that thread, not the process."""
    proc = client.python(HEADER + INIT + (
        "t = threading.Thread(target=sys.exit, args=(7,))\n"
        "t.start(); t.join()\n"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _ended_run(client)
    assert (run["state"], run["exit_code"]) == ("finished", 0)


def test_sys_exit_after_a_caught_one_gives_its_own_code(client):
    proc = client.python(HEADER + INIT + (
        "try:\n"
        "    sys.exit(3)\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.exit(6)\n"))
    assert proc.returncode == 6, proc.stderr[-3000:]
    run = _ended_run(client)
    assert (run["state"], run["exit_code"]) == ("failed", 6)


@pytest.mark.parametrize("ending,status", [
    ("raise SystemExit(3)", 3),
    ("raise SystemExit('boom')", 1),
    ("raise SystemExit", 0),
    ("def main():\n    return 0\nraise SystemExit(main())", 0),
])
def test_raise_system_exit_written_out_ends_the_run_with_0_and_says_so(client, ending, status):
    """The documented limit: no hook sees the code of a SystemExit raised by hand; the run ends
    finished with exit code 0 and the package says on stderr that the status is unknown."""
    proc = client.python(HEADER + INIT + ending + "\n")
    assert proc.returncode == status, proc.stderr[-3000:]
    run = _ended_run(client)
    assert (run["state"], run["exit_code"]) == ("finished", 0)
    assert UNSEEN in proc.stderr and "sys.exit(code)" in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.count("cohort: the program ended by a SystemExit") == 1


def test_raise_system_exit_inside_a_with_block_gives_its_code(client):
    """The way around the limit: the run's with block sees the SystemExit leaving it."""
    proc = client.python(HEADER + (
        "with cohort.init(project='exit') as run:\n"
        "    run.log({'a': 1})\n"
        "    raise SystemExit(3)\n"))
    assert proc.returncode == 3, proc.stderr[-3000:]
    run = _ended_run(client)
    assert (run["state"], run["exit_code"]) == ("failed", 3)
    assert UNSEEN not in proc.stderr


def test_a_shared_worker_writer_ends_with_its_own_process_exit_code(client, tmp_path):
    """Shared mode: a non-primary writer's process that calls sys.exit(3) ends its own writer
    failed with 3; the primary's writer and the run end with the primary's status."""
    started = tmp_path / "primary_started"
    release = tmp_path / "release"
    primary = client.popen(["-c", HEADER + (
        "import pathlib, time\n"
        "run = cohort.init(project='exit', settings=cohort.Settings(mode='shared', "
        "x_label='rank_0', x_primary=True))\n"
        f"pathlib.Path({str(started)!r}).write_text(run.id)\n"
        f"while not pathlib.Path({str(release)!r}).exists():\n"
        "    time.sleep(0.05)\n")])
    try:
        wait_until(lambda: started.exists() and started.read_text(), what="primary started")
        run_id = started.read_text()
        worker = client.python(HEADER + (
            f"run = cohort.init(project='exit', id={run_id!r}, settings=cohort.Settings("
            "mode='shared', x_label='rank_1', x_primary=False))\n"
            "run.log({'a': 1})\n"
            "sys.exit(3)\n"))
        assert worker.returncode == 3, worker.stderr[-3000:]
        view = client.run_view(run_id, project=PROJECT)
        writers = wait_until(lambda: (w := view.writers()).get("rank_1", {}).get("state")
                             not in (None, "running") and w, what="rank_1 ended")
        assert (writers["rank_1"]["state"], writers["rank_1"]["exit_code"]) == ("failed", 3)
    finally:
        release.write_text("")
    out, err = primary.communicate(timeout=120)
    assert primary.returncode == 0, err[-3000:]
    run = view.wait_state()
    writers = view.writers()
    assert (writers["rank_0"]["state"], writers["rank_0"]["exit_code"]) == ("finished", 0)
    assert (run["state"], run["exit_code"]) == ("finished", 0)
