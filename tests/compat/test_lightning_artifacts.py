"""A real Lightning run (lightning 2.2.5 from PyPI, Debian's torch) with its WandbLogger and the
vendor's SDK pointed at Cohort: `log_model="all"` logs every checkpoint the ModelCheckpoint
callback saves, `log_model=True` the checkpoints at the end. Each becomes a Cohort artifact
version whose file is the checkpoint on disk, byte for byte, with Lightning's aliases
("latest", "best") and metadata (the monitored score)."""
import hashlib
import json
import urllib.request

import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

TRAIN = r'''
import os, sys, json, torch
import lightning.pytorch.core.module as lm
lm._TORCH_GREATER_EQUAL_2_1 = True   # torch 1.13's distributed._shard fails to import on 3.11
import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import WandbLogger

out, log_model, project = sys.argv[1], sys.argv[2], sys.argv[3]
log_model = {"all": "all", "true": True}[log_model]
torch.manual_seed(0)

class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, on_epoch=True, on_step=False)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

x = torch.randn(64, 8)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)
logger = WandbLogger(project=project, name="lt-" + sys.argv[2], log_model=log_model)
ckpt = ModelCheckpoint(dirpath=out, monitor="train_loss", save_top_k=-1, every_n_epochs=1,
                       filename="{epoch}")
trainer = pl.Trainer(max_epochs=3, logger=logger, callbacks=[ckpt], accelerator="cpu",
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny(), data)
import wandb
best = os.path.basename(ckpt.best_model_path)
wandb.finish()
print("TRAINED " + json.dumps({"best": best, "run": logger.version}))
'''


def cohort_get(server, path):
    req = urllib.request.Request(server.url + path)
    req.add_header("Authorization", "Bearer " + server.config["api_key"])
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def train(server, tmp_path, log_model, project):
    out = tmp_path / "ckpt"
    env = sdk_env(server, tmp_path, {"WANDB_PROJECT": project})
    r = run_python(TRAIN, env, tmp_path, timeout=500, args=(out, log_model, project))
    assert r.returncode == 0 and "TRAINED" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]
    info = json.loads(r.stdout.split("TRAINED ", 1)[1].splitlines()[0])
    return out, info


@pytest.mark.parametrize("log_model", ["all", "true"])
def test_lightning_checkpoints_become_artifact_versions(server, tmp_path, log_model):
    project = "lt-" + log_model
    out, info = train(server, tmp_path, log_model, project)
    entity = json.loads(cohort_get(server, "/api/v1/viewer"))["entity"]
    cols = json.loads(cohort_get(server, f"/api/v1/artifacts/{entity}/{project}"))["collections"]
    name = "model-" + info["run"]
    assert [(c["name"], c["type"]) for c in cols] == [(name, "model")], cols
    checkpoints = sorted(out.glob("*.ckpt"), key=lambda p: p.stat().st_mtime)
    assert [p.name for p in checkpoints] == ["epoch=0.ckpt", "epoch=1.ckpt", "epoch=2.ckpt"]
    versions = json.loads(cohort_get(server, f"/api/v1/artifacts/{entity}/{project}/{name}/versions"))
    # Every checkpoint is a version (both modes log all of them: "all" as they are saved, True
    # at the end), its one file "model.ckpt" the checkpoint's bytes.
    assert len(versions["versions"]) == 3, versions
    by_original = {}
    for index in range(3):
        v = json.loads(cohort_get(server, f"/api/v1/artifacts/{entity}/{project}/{name}/v{index}"))
        assert [f["path"] for f in v["files"]] == ["model.ckpt"], v["files"]
        original = v["metadata"]["original_filename"]
        by_original[original] = v
        local = (out / original).read_bytes()
        assert v["files"][0]["sha256"] == hashlib.sha256(local).hexdigest(), original
        assert cohort_get(server, v["files"][0]["url"]) == local
        assert "score" in v["metadata"] and v["metadata"]["ModelCheckpoint"]["monitor"] == "train_loss"
        assert v["produced_by"] is not None
    assert sorted(by_original) == [p.name for p in checkpoints]
    # Lightning's aliases: "best" on the best checkpoint's version, "latest" on the last logged.
    assert "best" in by_original[info["best"]]["aliases"], {k: v["aliases"] for k, v in by_original.items()}
    latest = [k for k, v in by_original.items() if "latest" in v["aliases"]]
    assert len(latest) == 1, {k: v["aliases"] for k, v in by_original.items()}
