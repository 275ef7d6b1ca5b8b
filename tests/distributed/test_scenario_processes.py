"""The seed's process examples: setup() + multiprocessing.Pool (examples/pool_setup.py), and a
run passed to a child process (examples/share_run.py), with fork and spawn start methods."""
import pytest

from dist_helpers import EXAMPLES, PROJECT, assert_ok, client, wait_until  # noqa: F401


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_children_each_log_a_finished_run_through_one_agent(client, method):
    assert_ok(client.run([EXAMPLES / "pool_setup.py", "--project", PROJECT,
                          "--start-method", method]))
    runs = wait_until(lambda: (r := client.runs()) and len(r) == 4 and
                      all(x["state"] == "finished" for x in r) and r,
                      what=lambda: f"4 finished runs: {client.runs()}")
    by_n = {r["config"]["n"]: r for r in runs}
    assert sorted(by_n) == [0, 1, 2, 3]
    for n, run in by_n.items():
        view = client.run_view(run["id"])
        hist = wait_until(lambda: view.history(keys=["this"]), what=f"run n={n} history")
        (key, writer), points = next(iter(hist.items()))
        assert key == "this" and [v for _, v in points] == [float(n * n)]
        writers = view.writers()
        assert writers[writer]["state"] == "finished"
    # setup() started the agent before the pool; every child used it (one agent, no fallback).
    assert len(client.agent_pids()) == 1


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_run_passed_to_a_child_logs_as_its_own_writer_of_the_same_run(client, method):
    proc = assert_ok(client.run([EXAMPLES / "share_run.py", "--project", PROJECT,
                                 "--start-method", method]))
    assert "child exit code 0" in proc.stdout
    runs = client.runs()
    assert len(runs) == 1, runs  # the child made no run of its own
    view = client.run_view(runs[0]["id"])
    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    assert run["exit_code"] == 0
    writers = wait_until(lambda: (w := view.writers()) and len(w) == 2 and w, what="2 writers")
    parent = next(l for l, w in writers.items() if w["primary"])
    child = next(l for l in writers if l != parent)
    assert child.startswith(parent + "-")
    assert int(child.rsplit("-", 1)[1]) == writers[child]["pid"] != writers[parent]["pid"]
    assert writers[child]["state"] == "finished"
    assert not writers[child]["update_finish_state"]
    hist = wait_until(lambda: (h := view.history(keys=["this", "parent"])) and len(h) == 2 and h,
                      what="both writers' points")
    assert hist[("this", child)] == [(0, 1.0)]
    assert hist[("parent", parent)] == [(0, 1.0)]


CHILD_FAILS = """
import cohort


def work(run):
    run.log({{"child": 1.0}})
    raise ValueError("child failed")


if __name__ == "__main__":
    run = cohort.init(project="{project}")
    import multiprocessing as mp  # imported after init(): the exit hook must still be set up
    p = mp.get_context("{method}").Process(target=work, args=(run,))
    p.start()
    p.join()
    run.log({{"parent": 1.0}})
    run.finish()
    print(p.exitcode, p.pid)
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_child_that_raises_ends_its_writer_failed_and_the_run_goes_on(client, method):
    proc = assert_ok(client.python(CHILD_FAILS.format(project=PROJECT, method=method)))
    exitcode, pid = map(int, proc.stdout.split())
    assert exitcode == 1 and "ValueError: child failed" in proc.stderr
    runs = client.runs()
    assert len(runs) == 1
    view = client.run_view(runs[0]["id"])
    writers = wait_until(lambda: (w := view.writers()) and len(w) == 2 and
                         all(x["state"] != "running" for x in w.values()) and w,
                         what=lambda: f"2 ended writers: {view.writers()}")
    child = next(l for l, w in writers.items() if w["pid"] == pid)
    assert (writers[child]["state"], writers[child]["exit_code"]) == ("failed", 1)
    run = wait_until(lambda: (r := view.get())["state"] == "finished" and r, what="finished")
    assert run["exit_code"] == 0  # the child never ends the run


PICKLED_PARENT = """
import pickle
import subprocess
import sys

import cohort

CHILD = '''
import pickle
import sys

import cohort

run = pickle.load(sys.stdin.buffer)
assert cohort.init() is run, "init() returns the run received from the parent"
run.log({{"child": 2.0}})
run.finish()
print(run.label)
'''

run = cohort.init(project="{project}")
child = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps(run),
                       capture_output=True, timeout=120)
sys.stderr.write(child.stderr.decode())
run.log({{"parent": 1.0}})
run.finish()
print(run.label, child.returncode, child.stdout.decode().strip())
"""


def test_run_pickled_and_restored_in_a_fresh_process_still_logs(client):
    # Not multiprocessing: the bytes of pickle.dumps(run) go to an unrelated interpreter.
    proc = assert_ok(client.python(PICKLED_PARENT.format(project=PROJECT)))
    parent, code, child = proc.stdout.split()
    assert code == "0", proc.stderr
    assert child.startswith(parent + "-")
    runs = client.runs()
    assert len(runs) == 1, runs
    view = client.run_view(runs[0]["id"])
    hist = wait_until(lambda: (h := view.history(keys=["child", "parent"])) and len(h) == 2 and h,
                      what="both writers' points")
    assert hist[("child", child)] == [(0, 2.0)]
    assert hist[("parent", parent)] == [(0, 1.0)]
    writers = wait_until(lambda: (w := view.writers()) and
                         all(x["state"] == "finished" for x in w.values()) and w,
                         what="finished writers")
    assert not writers[child]["primary"] and not writers[child]["update_finish_state"]
