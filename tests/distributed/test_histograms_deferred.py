"""Histograms computed off the training thread (cohort.histogram's snapshots, the histogram
worker): a real training process logs large CPU tensors (binned later from a copy taken at the
call) with scalars through the real agent and server; the tensors change right after each call
(an optimizer step, a zeroed gradient) and the stored counts are those of the values at the call;
each histogram lands at the step of its call while the writer has moved on; finish waits for
them; a key's type is claimed at the call (a scalar key raises there); a call at a step below the
current one is dropped and counted, as for every value; watch's hooks on a model whose tensors
are over the snapshot size."""
import json

import numpy as np
import pytest

from dist_helpers import assert_ok, client, wait_until  # noqa: F401

DEFERRED_SCRIPT = """
import json, time
import torch
import cohort
from cohort import _histogram_worker
from cohort.histogram import _DEFER_CPU_MIN
run = cohort.init(project="hist")
n = 4 * _DEFER_CPU_MIN
t = torch.zeros(n)
errors = []
for step in range(6):
    t.copy_(torch.arange(n, dtype=torch.float32) % (step + 2))  # values 0..step+1
    h = cohort.Histogram(t, num_bins=step + 2)
    assert h._pending, "a large CPU tensor is binned later"
    run.log({"loss": float(step), "w": h})
    t.fill_(-1000.0)  # after the call: must not reach the histogram
try:
    run.log({"loss": cohort.Histogram(t)})  # a scalar key: refused at the call
except Exception as e:
    errors.append(type(e).__name__ + ": " + str(e))
run.log({"w": cohort.Histogram(t), "x": 1.0}, step=2)  # below the current step: dropped
# Read at once by the caller: computed on this thread, from the snapshot.
t.copy_(torch.arange(n, dtype=torch.float32))
direct = cohort.Histogram(t, num_bins=4)
t.zero_()
print("DIRECT", json.dumps(direct.histogram))
print("ERRORS", json.dumps(errors))
print("DROPPED", run.dropped)
print("RUN", run.id)
run.finish()
print("STATS", json.dumps(_histogram_worker.stats()))
"""


def _line(proc, prefix):
    return next(line[len(prefix) + 1:] for line in proc.stdout.splitlines()
                if line.startswith(prefix + " "))


def _histograms(client, view, **query):
    body = client.get(view.path + "/histograms", **query)
    return {(h["key"], h["writer"]): h for h in body["histograms"]}


def test_tensors_binned_off_the_training_thread_keep_the_values_and_step_of_their_call(client):
    proc = assert_ok(client.python(DEFERRED_SCRIPT))
    n = 4 * 65536
    assert json.loads(_line(proc, "DIRECT")) == [n / 4] * 4
    errors = json.loads(_line(proc, "ERRORS"))
    assert len(errors) == 1 and "'loss'" in errors[0] and "scalar" in errors[0], errors
    assert int(_line(proc, "DROPPED")) >= 2, proc.stdout  # "w" and "x" of the call at step 2
    stats = json.loads(_line(proc, "STATS"))
    assert stats["logged"] == 6 and stats["failures"] == 0 and stats["queued"] == 0, stats
    view = client.run_view(_line(proc, "RUN"), project="hist")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    keys = {(k["key"], k["type"]) for k in client.get(view.path + "/keys")["keys"]}
    assert {("loss", "scalar"), ("w", "histogram")} <= keys, keys
    h = _histograms(client, view)
    writer = next(iter(h))[1]
    steps = h[("w", writer)]["steps"]
    assert [s["step"] for s in steps] == [0, 1, 2, 3, 4, 5], steps
    for step, s in enumerate(steps):
        values = np.arange(n, dtype=np.float32) % (step + 2)
        assert (s["lo"], s["hi"]) == (0, step + 1), s
        want, _ = np.histogram(values, bins=step + 2, range=(0, step + 1))
        assert s["counts"] == want.tolist(), (step, s["counts"])
    loss_steps = [st for series in view.history(keys=["loss"]).values() for st, _ in series]
    assert loss_steps == [0, 1, 2, 3, 4, 5]


WATCH_SCRIPT = """
import json
import torch
import cohort
from cohort import _histogram_worker
run = cohort.init(project="hist")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
run.watch(model, log="all", log_freq=2)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(32, 512)
expected = {}
for step in range(4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    if step % 2 == 1:  # a watched step: the parameters as the forward pass saw them
        expected[step] = float(model[0].weight.detach().abs().max())
    loss.backward()
    opt.step()
    run.log({"loss": float(loss)})
print("EXPECTED", json.dumps(expected))
print("RUN", run.id)
run.finish()
print("STATS", json.dumps(_histogram_worker.stats()))
"""


def test_watch_bins_large_tensors_off_the_training_thread(client):
    proc = assert_ok(client.python(WATCH_SCRIPT))
    stats = json.loads(_line(proc, "STATS"))
    # 0.weight (131,072 elements) and its gradient, at each of the two watched steps
    assert stats["logged"] == 4 and stats["failures"] == 0, stats
    expected = {int(k): v for k, v in json.loads(_line(proc, "EXPECTED")).items()}
    view = client.run_view(_line(proc, "RUN"), project="hist")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    h = _histograms(client, view)
    series = {key: s for (key, _), s in h.items()}
    assert set(series) == {f"{kind}/{name}" for kind in ("gradients", "parameters")
                           for name in ("0.weight", "0.bias", "2.weight", "2.bias")}
    for key, s in series.items():
        assert [st["step"] for st in s["steps"]] == [1, 3], (key, s["steps"])
    for st in series["parameters/0.weight"]["steps"]:
        assert sum(st["counts"]) == 512 * 256
        # the values before that step's update (the snapshot), not after it
        assert max(abs(st["lo"]), abs(st["hi"])) == pytest.approx(expected[st["step"]], rel=1e-6)
