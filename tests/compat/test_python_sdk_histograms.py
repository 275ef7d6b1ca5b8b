"""The vendor's Python SDK logging histograms into Cohort (issue 15): `wandb.Histogram` values
and `wandb.watch(model, log="all", log_freq=1)` on a small torch model, unchanged clients pointed
at the server, checked through Cohort's own routes (.../keys types, .../histograms counts)."""
import json

import numpy as np
import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

SCRIPT = r'''
import json, sys
import numpy as np
import torch
import wandb
run_id, project = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
run = wandb.init(project=project, id=run_id)
run.watch(model, log="all", log_freq=1)
rng = np.random.default_rng(3)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(3):
    data = rng.normal(size=1000) + step
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    run.log({"loss": loss.item(), "h": wandb.Histogram(data),
             "same": wandb.Histogram(np.full(10, 2.0))})
print("NUMEL", json.dumps({n: p.numel() for n, p in model.named_parameters()}))
run.finish()
'''


def test_wandb_histograms_and_watch_are_stored_as_histograms(server, api, entity, tmp_path):
    env = sdk_env(server, tmp_path)
    proc = run_python(SCRIPT, env, tmp_path, args=("hist01", "sdkhist"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    numel = json.loads(next(l[6:] for l in proc.stdout.splitlines() if l.startswith("NUMEL ")))
    base = f"/api/v1/runs/{entity}/sdkhist/hist01"
    status, keys = api.get(base + "/keys")
    assert status == 200, keys
    types = {k["key"]: k["type"] for k in keys["keys"]}
    assert types["loss"] == "scalar" and types["h"] == "histogram" and types["same"] == "histogram"
    for name in numel:
        assert types.get(f"gradients/{name}") == "histogram", types
        assert types.get(f"parameters/{name}") == "histogram", types

    status, body = api.get(base + "/histograms")
    assert status == 200, body
    by_key = {h["key"]: h for h in body["histograms"]}
    rng = np.random.default_rng(3)
    h = by_key["h"]["steps"]
    assert [s["step"] for s in h] == [0, 1, 2]
    for step, s in enumerate(h):
        data = rng.normal(size=1000) + step
        counts, edges = np.histogram(data, bins=64)  # what wandb.Histogram sends
        assert s["counts"] == counts.tolist()
        assert s["edges"] == pytest.approx(edges.tolist(), rel=1e-12)
    # All values equal: the vendor sends one bin with two equal edges; stored around the value.
    same = by_key["same"]["steps"][0]
    assert sum(same["counts"]) == 10
    # Its edges: the step's own, or (every step having the same) the series' once.
    edges = same.get("edges", by_key["same"].get("edges", [None]))
    assert same.get("lo", edges[0]) <= 2.0
    for name, n in numel.items():
        for kind in ("gradients", "parameters"):
            steps = by_key[f"{kind}/{name}"]["steps"]
            assert steps, (kind, name)
            for s in steps:
                assert sum(s["counts"]) == n, (kind, name, s)
