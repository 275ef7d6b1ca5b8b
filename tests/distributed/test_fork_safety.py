"""fork() while a run is live: DataLoader workers never deadlock, and a forked child that logs
gets a writer (and a connection) of its own."""
from dist_helpers import assert_ok, client, wait_until  # noqa: F401

DATALOADER = """
import threading
import torch
from torch.utils.data import DataLoader, TensorDataset
import cohort

run = cohort.init(project="fork")
stop = threading.Event()

def spam():  # another thread logs while the workers fork: the locks must survive it
    while not stop.is_set():
        run.log({"spam": 1.0}, commit=False)

t = threading.Thread(target=spam)
t.start()
data = TensorDataset(torch.randn(256, 4), torch.randn(256, 1))
for epoch in range(3):
    loader = DataLoader(data, batch_size=32, num_workers=2)  # fresh workers every epoch
    for x, y in loader:
        run.log({"epoch": epoch, "batch_mean": x.mean()})
stop.set()
t.join()
run.finish()
print("done", flush=True)
"""

FORK_CHILD = """
import os, sys
import cohort

run = cohort.init(project="fork")
run.log({"parent": 1.0})
pid = os.fork()
if pid == 0:
    run.log({"child": 2.0})
    run.log({"child": 3.0})
    sys.exit(0)  # the exit hook finishes the child's own writer
_, status = os.waitpid(pid, 0)
run.log({"parent": 4.0})
run.finish()
print(pid, status, flush=True)
"""


def test_dataloader_workers_do_not_deadlock_and_do_not_become_writers(client):
    proc = assert_ok(client.python(DATALOADER, timeout=180))
    assert "done" in proc.stdout
    runs = client.runs(project="fork")
    assert len(runs) == 1
    view = client.run_view(runs[0]["id"], project="fork")
    assert wait_until(lambda: view.get()["state"] == "finished", what="finished")
    assert len(view.writers()) == 1  # the workers never logged, so they never joined
    hist = wait_until(lambda: (h := view.history(keys=["epoch"])) and
                      sum(len(p) for p in h.values()) == 3 * 8 and h, what="24 points")


def test_forked_child_that_logs_gets_its_own_writer(client):
    proc = assert_ok(client.python(FORK_CHILD))
    child_pid, status = map(int, proc.stdout.split())
    assert status == 0
    runs = client.runs(project="fork")
    assert len(runs) == 1
    view = client.run_view(runs[0]["id"], project="fork")
    writers = wait_until(lambda: (w := view.writers()) and len(w) == 2 and
                         all(x["state"] == "finished" for x in w.values()) and w,
                         what="2 finished writers")
    parent = next(l for l, w in writers.items() if w["primary"])
    child = f"{parent}-{child_pid}"
    assert child in writers and writers[child]["pid"] == child_pid
    assert view.get()["state"] == "finished"
    hist = wait_until(lambda: (h := view.history(keys=["parent", "child"])) and len(h) == 2 and
                      len(h.get(("child", child), [])) == 2 and h, what="points of both")
    assert [v for _, v in hist[("parent", parent)]] == [1.0, 4.0]
    assert hist[("child", child)] == [(0, 2.0), (1, 3.0)]  # steps count per writer
