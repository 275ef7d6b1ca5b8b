"""A real Hugging Face Trainer run (transformers from PyPI, Debian's torch, a tiny model built
from a config: no downloads) with the vendor's SDK and WANDB_WATCH=all, as issue 15 asks: the
Trainer's `wandb.watch(model, log="all", log_freq=max(100, logging_steps))` gradient and
parameter histograms are stored as Cohort histograms beside the Trainer's scalars (before,
they were skipped on arrival and lost)."""
import json

import pytest

from .compat_helpers import HF_TINY_GPT2, run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

TRAIN = HF_TINY_GPT2 + r'''
# 100 steps: the Trainer's watch logs every max(100, logging_steps) steps, so once.
args = TrainingArguments(output_dir=out, max_steps=100, logging_steps=50, save_strategy="no",
                         per_device_train_batch_size=4, report_to=["wandb"], run_name="hf-watch",
                         use_cpu=True, disable_tqdm=True)
trainer = Trainer(model=model, args=args, train_dataset=Data())
trainer.train()
import wandb
run_id = wandb.run.id
wandb.finish()
print("NUMEL", json.dumps({n: p.numel() for n, p in model.named_parameters()}))
print("RUN", run_id)
'''


def test_trainer_watch_all_stores_gradient_and_parameter_histograms(server, api, entity,
                                                                     tmp_path):
    env = sdk_env(server, tmp_path, {"WANDB_WATCH": "all", "WANDB_PROJECT": "hfwatch"})
    r = run_python(TRAIN, env, tmp_path, timeout=500, args=(tmp_path / "out",))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    lines = r.stdout.splitlines()
    numel = json.loads(next(l[6:] for l in lines if l.startswith("NUMEL ")))
    run_id = next(l[4:] for l in lines if l.startswith("RUN "))
    base = f"/api/v1/runs/{entity}/hfwatch/{run_id}"

    status, keys = api.get(base + "/keys")
    assert status == 200, keys
    types = {k["key"]: k["type"] for k in keys["keys"]}
    # The Trainer's own scalars are there too, on its global-step axis.
    assert types.get("train/loss") == "scalar", types
    assert types.get("train/global_step") == "scalar", types
    # Every parameter of the model (GPT-2 ties lm_head to wte: named_parameters lists it once)
    # has a gradient and a parameter histogram.
    for name in numel:
        assert types.get(f"gradients/{name}") == "histogram", (name, sorted(types))
        assert types.get(f"parameters/{name}") == "histogram", (name, sorted(types))

    status, body = api.get(base + "/histograms")
    assert status == 200, body
    by_key = {h["key"]: h for h in body["histograms"]}
    for name, n in numel.items():
        for kind in ("gradients", "parameters"):
            series = by_key[f"{kind}/{name}"]
            assert series["count"] == 1, (kind, name, series["count"])  # logged once, at step 100
            (s,) = series["steps"]
            # The vendor bins a tensor into 64 bins (one when all its values are equal); every
            # element is counted once.
            assert len(s["counts"]) in (1, 64), (kind, name, s)
            assert sum(s["counts"]) == n, (kind, name, s)
