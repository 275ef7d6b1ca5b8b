"""A real Hugging Face Trainer run (transformers from PyPI, Debian's torch, a tiny model built
from a config: no downloads) with the vendor's SDK and WANDB_LOG_MODEL=checkpoint: every
checkpoint the Trainer saves becomes a Cohort artifact version whose files are the checkpoint's,
byte for byte (before, they were answered with success and lost)."""
import hashlib
import json
import pathlib
import urllib.request

import pytest

from .compat_helpers import HF_TINY_GPT2, run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

TRAIN = HF_TINY_GPT2 + r'''
args = TrainingArguments(output_dir=out, max_steps=6, save_steps=3, logging_steps=1,
                         per_device_train_batch_size=4, report_to=["wandb"], run_name="hf-ckpt",
                         use_cpu=True, save_safetensors=True, disable_tqdm=True)
Trainer(model=model, args=args, train_dataset=Data()).train()
import wandb
wandb.finish()
print("TRAINED")
'''


def cohort_get(server, path):
    req = urllib.request.Request(server.url + path)
    req.add_header("Authorization", "Bearer " + server.config["api_key"])
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def test_trainer_checkpoints_become_artifact_versions(server, api, tmp_path):
    out = tmp_path / "out"
    env = sdk_env(server, tmp_path, {"WANDB_LOG_MODEL": "checkpoint", "WANDB_PROJECT": "hf",
                                     "WANDB_WATCH": "false"})
    r = run_python(TRAIN, env, tmp_path, timeout=500, args=(out,))
    assert r.returncode == 0 and "TRAINED" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]

    entity = json.loads(cohort_get(server, "/api/v1/viewer"))["entity"]
    cols = json.loads(cohort_get(server, f"/api/v1/artifacts/{entity}/hf"))["collections"]
    # The checkpoints, and the final model logged at the end of training.
    assert sorted((c["name"], c["type"], c["version_count"]) for c in cols) == [
        ("checkpoint-hf-ckpt", "model", 2), ("model-hf-ckpt", "model", 1)], cols
    name = "checkpoint-hf-ckpt"
    versions = json.loads(cohort_get(server, f"/api/v1/artifacts/{entity}/hf/{name}/versions"))
    checkpoints = sorted(p for p in out.iterdir() if p.name.startswith("checkpoint-"))
    assert [c.name for c in checkpoints] == ["checkpoint-3", "checkpoint-6"]
    assert len(versions["versions"]) == len(checkpoints), versions
    # Each version holds its checkpoint's files, byte for byte.
    for index, ckpt in enumerate(checkpoints):
        v = json.loads(cohort_get(server, f"/api/v1/artifacts/{entity}/hf/{name}/v{index}"))
        stored = {f["path"]: f for f in v["files"]}
        local = {p.relative_to(ckpt).as_posix(): p for p in ckpt.rglob("*") if p.is_file()}
        assert set(stored) == set(local), (sorted(stored), sorted(local))
        assert "model.safetensors" in stored
        for path, p in local.items():
            assert stored[path]["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest(), path
        weights = cohort_get(server, stored["model.safetensors"]["url"])
        assert weights == (ckpt / "model.safetensors").read_bytes()
        assert v["produced_by"] is not None
