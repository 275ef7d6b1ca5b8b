"""Histograms end to end (issue 15): cohort.Histogram from lists, numpy arrays, np_histogram
pairs and torch tensors, logged with scalars in one call by a real training process, through the
real agent (batch v4) and server (SQLite store), read back through the routes
(.../keys with types, .../histograms with buckets) and cohort.Api; one type per key (a Python
exception in the writer, a refused batch across writers); run.watch on a real torch model; the
shared mode with two writers."""
import json

import numpy as np
import pytest

from dist_helpers import assert_ok, client, wait_until  # noqa: F401

LOG_SCRIPT = """
import json, math
import numpy as np
import torch
import cohort
run = cohort.init(project="hist")
rng = np.random.default_rng(7)
data = rng.normal(size=10000)
t = torch.arange(1000, dtype=torch.float32)
for step in range(5):
    run.log({"loss": 1.0 / (step + 1),
             "np": cohort.Histogram(data + step, num_bins=32),
             "list": cohort.Histogram([1, 2, 2, 3, 3, 3, float("nan"), float("inf")], num_bins=3),
             "given": cohort.Histogram(np_histogram=([1, 0, 5], [0.0, 0.5, 2.0, 10.0])),
             "tensor": cohort.Histogram(t, num_bins=10)})
# One type per key: each of these raises, naming the key and both types, and logs nothing.
errors = []
for bad in ({"loss": cohort.Histogram([1, 2])}, {"np": 0.5},
            {"system/x": cohort.Histogram([1, 2]), "ok": 1.0}):
    try:
        run.log(bad)
    except Exception as e:
        errors.append(type(e).__name__ + ": " + str(e))
try:
    cohort.Histogram(np_histogram=([1, float("nan")], [0, 1, 2]))
except ValueError as e:
    errors.append("ValueError: " + str(e))
print("ERRORS", json.dumps(errors))
print("DROPPED", cohort.Histogram([1.0, float("nan"), float("-inf")]).dropped)
print("RUN", run.id)
run.finish()
"""


def _import_cohort():
    """The SDK in this (the test's) process, for its read API."""
    import os
    import sys
    from conftest import BUILD, ROOT
    os.environ.setdefault("COHORT_BUILD_DIR", str(BUILD))
    if str(ROOT / "python") not in sys.path:
        sys.path.insert(0, str(ROOT / "python"))
    import cohort
    return cohort


def _run_id(proc):
    return next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RUN "))


def _histograms(client, view, **query):
    body = client.get(view.path + "/histograms", **query)
    return {(h["key"], h["writer"]): h for h in body["histograms"]}


def test_histograms_logged_with_scalars_are_stored_and_read_back(client):
    proc = assert_ok(client.python(LOG_SCRIPT))
    errors = json.loads(next(line[7:] for line in proc.stdout.splitlines()
                             if line.startswith("ERRORS ")))
    assert len(errors) == 4, errors
    assert "'loss'" in errors[0] and "scalar" in errors[0] and "histogram" in errors[0], errors
    assert "'np'" in errors[1] and "scalar" in errors[1] and "histogram" in errors[1], errors
    assert "'system/x'" in errors[2] and "system/" in errors[2], errors
    assert "count 1 is nan" in errors[3], errors
    assert "DROPPED 2" in proc.stdout, proc.stdout
    run_id = _run_id(proc)
    view = client.run_view(run_id, project="hist")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")

    keys = {(k["key"], k["type"]): k for k in client.get(view.path + "/keys")["keys"]}
    assert {("loss", "scalar"), ("np", "histogram"), ("list", "histogram"),
            ("given", "histogram"), ("tensor", "histogram")} <= set(keys), keys
    assert keys[("np", "histogram")]["count"] == 5
    assert (keys[("np", "histogram")]["min_step"], keys[("np", "histogram")]["max_step"]) == (0, 4)
    # The scalars of the same calls are at the same steps.
    loss_steps = [s for series in view.history(keys=["loss"]).values() for s, _ in series]
    assert loss_steps == [0, 1, 2, 3, 4]

    h = _histograms(client, view)
    assert set(k for k, _ in h) == {"np", "list", "given", "tensor"}
    writer = next(iter(h))[1]
    rng = np.random.default_rng(7)
    data = rng.normal(size=10000)
    for step, s in enumerate(h[("np", writer)]["steps"]):
        assert s["step"] == step
        counts, edges = np.histogram(data + step, bins=32, range=(s["lo"], s["hi"]))
        assert s["counts"] == counts.tolist()
        assert s["lo"] == pytest.approx((data + step).min())
        assert s["hi"] == pytest.approx((data + step).max())
    lst = h[("list", writer)]["steps"][0]
    assert (lst["lo"], lst["hi"], lst["counts"]) == (1, 3, [1, 2, 3])  # NaN and inf left out
    # Explicit edges that every step shares come once, for the series, not once per step.
    given_series = h[("given", writer)]
    assert given_series["edges"] == [0, 0.5, 2, 10]
    given = given_series["steps"][0]
    assert "edges" not in given and "lo" not in given and given["counts"] == [1, 0, 5]
    assert len(given_series["steps"]) == 5
    # Steps with bins of their own keep them each (here: uniform bins over each step's range).
    assert "edges" not in h[("np", writer)]
    tensor = h[("tensor", writer)]["steps"][0]
    assert (tensor["lo"], tensor["hi"]) == (0, 999) and tensor["counts"] == [100] * 10

    # Read back with cohort.Api: a DataFrame of step, writer, edges, counts.
    cohort = _import_cohort()
    api = cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])
    df = api.run(f"{client.entity}/hist/{run_id}").histograms("given")
    assert list(df["step"]) == [0, 1, 2, 3, 4]
    assert df.iloc[0]["edges"] == [0, 0.5, 2, 10] and df.iloc[0]["counts"] == [1, 0, 5]
    assert set(df.columns) >= {"key", "writer", "step", "time", "edges", "counts"}
    merged = api.run(f"{client.entity}/hist/{run_id}").histograms("given", samples=2)
    assert list(merged["merged"]) == [2, 3] and list(merged["exact"]) == [True, True]
    assert merged.iloc[1]["counts"] == [3, 0, 15]


BUCKET_SCRIPT = """
import cohort
run = cohort.init(project="hist")
for step in range(1000):
    # uniform bins that move every 500 steps: the second half re-bins approximately
    lo = 0.0 if step < 500 else 5.0
    h = cohort.Histogram(np_histogram=([1, 2, 3, 4], [lo, lo + 1, lo + 2, lo + 3, lo + 4]))
    run.log({"h": h})
print("RUN", run.id)
run.finish()
"""


def test_histogram_query_merges_neighbouring_steps_into_buckets(client):
    proc = assert_ok(client.python(BUCKET_SCRIPT))
    view = client.run_view(_run_id(proc), project="hist")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    h = _histograms(client, view, keys="h", buckets=10)
    (series,) = h.values()
    assert series["count"] == 1000 and len(series["steps"]) == 10
    for i, b in enumerate(series["steps"]):
        assert b["step"] == i * 100 and b["last_step"] == i * 100 + 99 and b["merged"] == 100
        assert b["exact"] is True and b["counts"] == [100, 200, 300, 400]
    h = _histograms(client, view, keys="h", buckets=1)
    (only,) = h[("h", series["writer"])]["steps"]
    assert only["exact"] is False and (only["lo"], only["hi"]) == (0, 9)
    assert sum(only["counts"]) == pytest.approx(10000)
    # A step range without buckets: every step.
    h = _histograms(client, view, keys="h", min_step=10, max_step=19)
    assert [s["step"] for s in h[("h", series["writer"])]["steps"]] == list(range(10, 20))
    status, body = client.api.get(view.path + "/histograms?buckets=0")
    assert status == 400 and "buckets" in json.dumps(body)


WATCH_SCRIPT = """
import json
import torch
import cohort
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
run = cohort.init(project="hist")
run.watch(model, log="all", log_freq=2)
x, y = torch.randn(64, 8), torch.randn(64, 1)
hooks = []  # gradient hooks on a parameter during each backward pass
for step in range(6):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    h = model[0].weight._backward_hooks
    hooks.append(None if h is None else len(h))
    loss.backward()
    opt.step()
    run.log({"loss": loss.item()})
run.unwatch(model)
opt.zero_grad()
loss = torch.nn.functional.mse_loss(model(x), y)
h = model[0].weight._backward_hooks
hooks.append(None if h is None else len(h))
loss.backward()   # not watched any more
run.log({"loss": 0.0})
print("HOOKS", json.dumps(hooks))
print("NUMEL", json.dumps({n: p.numel() for n, p in model.named_parameters()}))
print("RUN", run.id)
run.finish()
"""


def test_watch_logs_gradient_and_parameter_histograms_of_a_torch_model(client):
    proc = assert_ok(client.python(WATCH_SCRIPT))
    # The gradient hooks are there only for the backward pass of a watched step (and gone after
    # unwatch): the other steps run no Python during their backward pass. None, not an empty
    # dict: a tensor whose hooks were removed keeps a C++ hook that calls the empty dict.
    hooks = json.loads(next(line[6:] for line in proc.stdout.splitlines()
                            if line.startswith("HOOKS ")))
    assert hooks == [None, 1, None, 1, None, 1, None], hooks
    numel = json.loads(next(line[6:] for line in proc.stdout.splitlines()
                            if line.startswith("NUMEL ")))
    view = client.run_view(_run_id(proc), project="hist")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    h = _histograms(client, view)
    expected = {f"{kind}/{name}" for kind in ("gradients", "parameters") for name in numel}
    assert {k for k, _ in h} == expected
    for (key, _), series in h.items():
        name = key.split("/", 1)[1]
        # every 2nd forward pass: steps 1, 3, 5 (the loop's step of that pass)
        assert [s["step"] for s in series["steps"]] == [1, 3, 5], (key, series["steps"])
        for s in series["steps"]:
            assert sum(s["counts"]) == numel[name]
    keys = {k["key"]: k["type"] for k in client.get(view.path + "/keys")["keys"]}
    assert keys["loss"] == "scalar" and keys["gradients/0.weight"] == "histogram"


SHARED_SCRIPT = """
import os, sys
import cohort
label, kind = sys.argv[1], sys.argv[2]
run = cohort.init(project="hist", id=os.environ["RUN_ID"], settings=cohort.Settings(
    mode="shared", x_label=label, x_primary=label == "rank_0",
    x_update_finish_state=label == "rank_0"))
for step in range(3):
    if kind == "histogram":
        run.log({"h": cohort.Histogram(list(range(10 * (step + 1))), num_bins=5),
                 "w": cohort.Histogram([step], num_bins=1)})
    else:
        run.log({"w": float(step)})     # "w" is a histogram of the other writer: refused
run.finish()
print("DONE", label)
"""


def test_shared_run_keeps_histograms_per_writer_and_one_type_per_key(client):
    script = client.tmp / "shared_hist.py"
    script.write_text(SHARED_SCRIPT)
    env = {"RUN_ID": "sharedhist"}
    procs = [client.popen([script, label, kind], env=env)
             for label, kind in (("rank_0", "histogram"), ("rank_1", "histogram"))]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, out + err
    # A third writer logs a scalar under a key the run has as a histogram: the server refuses
    # its batches (400 naming the key and both types); nothing of them is stored.
    assert_ok(client.run([script, "rank_2", "scalar"], env=env))
    view = client.run_view("sharedhist", project="hist")
    wait_until(lambda: len(_histograms(client, view, keys="h")) == 2, what="both writers")
    h = _histograms(client, view, keys="h")
    assert set(h) == {("h", "rank_0"), ("h", "rank_1")}
    for series in h.values():
        assert [sum(s["counts"]) for s in series["steps"]] == [10, 20, 30]
    wait_until(lambda: "rank_2" in view.writers(), what="the third writer")
    wait_until(lambda: view.writers()["rank_2"]["state"] == "finished", what="rank_2 finished")
    keys = client.get(view.path + "/keys")["keys"]
    assert not [k for k in keys if k["key"] == "w" and k["type"] == "scalar"], keys
    assert not view.history(keys=["w"]), view.history(keys=["w"])
