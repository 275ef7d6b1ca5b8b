"""cohort.integrations.accelerate.CohortTracker with a real Accelerator (accelerate 0.29 from
PyPI, Debian's torch 1.13): init_trackers' config, accelerator.log at explicit steps and without,
str values into the summary, get_tracker, end_training finishing the run."""
import pytest

from integ_helpers import (client, finished_run, read_api, result, run_ranks,  # noqa: F401
                           run_script)

pytestmark = pytest.mark.timeout(300)

TRAIN = r'''
import json, torch
from accelerate import Accelerator
import cohort
from cohort.integrations.accelerate import CohortTracker

tracker = CohortTracker(project="acc-integ", name="acc", group="accelerate")
assert tracker._run is None            # nothing started before the Accelerator
accelerator = Accelerator(cpu=True, log_with=[tracker])
accelerator.init_trackers("ignored-project-name", config={"lr": 0.1, "epochs": 2})
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 4)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)),
                                   batch_size=8)
model, opt, data = accelerator.prepare(model, opt, data)
losses, step = [], 0
for epoch in range(2):
    for xb, yb in data:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        accelerator.backward(loss)
        opt.step(); opt.zero_grad()
        step += 10
        losses.append(loss.item())
        accelerator.log({"loss": loss.item(), "lr": 0.1, "nested": {"epoch": epoch}}, step=step)
    accelerator.log({"phase": "epoch-end", "epoch_loss": sum(losses[-4:]) / 4})
run = accelerator.get_tracker("cohort", unwrap=True)
assert isinstance(run, cohort.Run) and accelerator.get_tracker("cohort") is tracker
info = {"id": run.id, "losses": losses}
accelerator.end_training()
assert run.finished
print("RESULT " + json.dumps(info))
'''


def test_accelerate_tracker(client):
    info = result(run_script(client, TRAIN))
    api = read_api(client)
    run = finished_run(api, f"acc-integ/{info['id']}")
    assert run.name == "acc" and run.group == "accelerate"
    assert run.config == {"lr": 0.1, "epochs": 2}
    h = run.history()
    rows = h[h["loss"].notna()]
    assert rows["step"].tolist() == list(range(10, 90, 10))
    assert rows["loss"].tolist() == info["losses"]
    assert rows["nested/epoch"].tolist() == [0] * 4 + [1] * 4
    # Without a step: into the current step's row (the SDK's rule), which it then commits.
    assert h.loc[h["epoch_loss"].notna(), "step"].tolist() == [40, 80]
    assert run.summary["phase"] == "epoch-end"


DDP = r'''
import json, os, sys, torch
from accelerate import Accelerator
import cohort
from cohort.integrations.accelerate import CohortTracker

mode = sys.argv[1] or None
tracker = CohortTracker(project="acc-ddp", name="ddp", mode=mode)
accelerator = Accelerator(cpu=True, log_with=[tracker])
assert accelerator.num_processes == 2
accelerator.init_trackers("acc-ddp", config={"lr": 0.1})
rank = accelerator.process_index
for step in range(3):
    values = {"loss": 1.0 / (step + 1), "rank": float(rank)}
    if mode == "shared":
        tracker.log(values, step=step)        # on every process (the Accelerator's tracker
                                              # list is filled on the main process only)
    else:
        accelerator.log(values, step=step)                          # main process only
run = tracker.tracker
print("RESULT " + json.dumps({"rank": rank, "id": run.id if run else None,
                              "label": run.label if run else None}))
accelerator.wait_for_everyone()
if mode == "shared":
    tracker.finish()            # every process ends its writer
else:
    accelerator.end_training()  # the main process ends the run
# Both ranks leave together and the process group is torn down before the interpreter exits
# (torch 1.13's gloo threads otherwise may abort a rank at exit: "terminate called without an
# active exception", exit -6, when its peer has gone first).
torch.distributed.barrier()
torch.distributed.destroy_process_group()
'''


@pytest.mark.parametrize("mode", ["shared", "main"])
def test_accelerate_tracker_on_two_processes(client, mode):
    outs = run_ranks(client, DDP, 2, mode if mode == "shared" else "")
    infos = sorted((result(o) for o in outs), key=lambda i: i["rank"])
    api = read_api(client)
    if mode == "main":
        assert infos[1]["id"] is None
        run = finished_run(api, f"acc-ddp/{infos[0]['id']}")
        assert [r.id for r in api.runs("acc-ddp")] == [run.id]
        assert run.config == {"lr": 0.1}
        h = run.history()
        assert h["step"].tolist() == [0, 1, 2] and set(h["rank"]) == {0.0}
        return
    assert infos[0]["id"] == infos[1]["id"]
    assert [i["label"] for i in infos] == ["rank_0", "rank_1"]
    run = finished_run(api, f"acc-ddp/{infos[0]['id']}", writers=2)
    assert run.config == {"lr": 0.1}
    h = run.history()
    for rank in (0, 1):
        part = h[h["writer"] == f"rank_{rank}"]
        assert part["step"].tolist() == [0, 1, 2] and set(part["rank"]) == {float(rank)}


ADOPT = r'''
import json
from accelerate import Accelerator
import cohort
from cohort.integrations.accelerate import CohortTracker

run = cohort.init(project="acc-adopt", name="mine", config={"mine": 1})
tracker = CohortTracker()                      # no run given: the process's current run
accelerator = Accelerator(cpu=True, log_with=[tracker])
accelerator.init_trackers("acc-adopt", config={"lr": 0.5})
accelerator.log({"x": 1.0}, step=3)
assert tracker.tracker is run
accelerator.end_training()
assert run.finished
print("RESULT " + json.dumps({"id": run.id}))
'''


def test_accelerate_tracker_uses_the_current_run(client):
    info = result(run_script(client, ADOPT))
    api = read_api(client)
    run = finished_run(api, f"acc-adopt/{info['id']}")
    assert [r.id for r in api.runs("acc-adopt")] == [info["id"]]
    assert run.name == "mine" and run.config == {"mine": 1, "lr": 0.5}
    assert run.history()["step"].tolist() == [3]


PREPARED = r'''
import json, sys, torch
from accelerate import Accelerator
import cohort
from cohort.integrations.accelerate import CohortTracker

tracker = CohortTracker(project="acc-prep", name="prep", mode="shared")
accelerator = Accelerator(cpu=True, log_with=[tracker])
accelerator.init_trackers("acc-prep", config={"lr": 0.1})   # the main process only
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)                # collectives (DDP's broadcast)
rank = accelerator.process_index
for step in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    accelerator.backward(loss)                              # an all-reduce
    opt.step(); opt.zero_grad()
    tracker.log({"loss": float(loss.item()), "rank": float(rank)}, step=step)
blank = accelerator.get_tracker("cohort")
run = tracker.tracker
print("RESULT " + json.dumps({"rank": rank, "id": run.id, "label": run.label,
                              "blank": blank is not tracker}))
accelerator.wait_for_everyone()
tracker.finish()
torch.distributed.barrier()
torch.distributed.destroy_process_group()
'''


def test_shared_tracker_after_prepare_and_backward_does_not_hang(client):
    # init_trackers runs on the main process only: the shared run's id must not come from a
    # collective there, which the other rank would meet in DDP's own collectives (a hang).
    outs = run_ranks(client, PREPARED, 2, timeout=90)
    infos = sorted((result(o) for o in outs), key=lambda i: i["rank"])
    assert infos[0]["id"] == infos[1]["id"]
    assert [i["label"] for i in infos] == ["rank_0", "rank_1"]
    # accelerate gives its blank tracker off the main process (the docs say to keep the
    # CohortTracker object instead).
    assert [i["blank"] for i in infos] == [False, True]
    run = finished_run(read_api(client), f"acc-prep/{infos[0]['id']}", writers=2)
    assert run.config == {"lr": 0.1}
    h = run.history()
    for rank in (0, 1):
        part = h[h["writer"] == f"rank_{rank}"]
        assert part["step"].tolist() == [0, 1, 2] and set(part["rank"]) == {float(rank)}


VALUES = r'''
import json, numpy as np, torch, warnings
from accelerate import Accelerator
from cohort.integrations.accelerate import CohortTracker

warnings.simplefilter("always")
tracker = CohortTracker(project="acc-values")
accelerator = Accelerator(cpu=True, log_with=[tracker])
accelerator.init_trackers("acc-values")
for step in (1, 2):
    accelerator.log({"loss": 1.0 / step, "per_class": np.array([0.5, 0.25]),
                     "grid": [[1, 2]], "t": torch.tensor(2.0 * step),
                     "nested": {"ok": 3.0, "bad": torch.ones(3)}}, step=step)
info = {"id": tracker.tracker.id}
accelerator.end_training()
print("RESULT " + json.dumps(info))
'''


def test_accelerate_tracker_logs_arrays_as_histograms(client):
    # As the vendor's tracker hands them to wandb.log: arrays, tensors and lists of numbers are
    # histograms (they were left out with a warning before run.log took them).
    proc = client.run([__import__("integ_helpers").write_script(client, "values.py", VALUES)])
    assert proc.returncode == 0, proc.stderr[-5000:]
    for key in ("per_class", "grid", "nested/bad"):
        assert f"{key!r} is not logged" not in proc.stderr, proc.stderr[-5000:]
    info = result(proc.stdout)
    run = finished_run(read_api(client), f"acc-values/{info['id']}")
    for key, total in (("per_class", 2), ("grid", 2), ("nested/bad", 3)):
        hist = run.histograms(key)
        assert hist["step"].tolist() == [1, 2], (key, hist)
        assert all(sum(c) == total for c in hist["counts"]), (key, hist)
    h = run.history()
    assert h["step"].tolist() == [1, 2]
    assert h["loss"].tolist() == [1.0, 0.5] and h["t"].tolist() == [2.0, 4.0]
    assert h["nested/ok"].tolist() == [3.0, 3.0]
    assert not {"per_class", "grid", "nested/bad"} & set(h.columns)
