"""cohort.integrations.lightning.CohortLogger with a real Lightning Trainer (lightning 2.2.5
from PyPI, Debian's torch 1.13): hyperparameters as config, metrics on the global-step axis with
trainer/global_step, watch histograms, name/version/experiment, and ModelCheckpoint's files as
artifact versions byte for byte with Lightning's aliases (log_model="all" and True)."""
import hashlib

import pytest

from integ_helpers import (LIGHTNING_PATCH, artifact_versions, client,  # noqa: F401
                           finished_run, read_api, result, run_ranks, run_script)

pytestmark = pytest.mark.timeout(300)

TRAIN = LIGHTNING_PATCH + r'''
import json, os, sys, torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
import cohort
from cohort.integrations.lightning import CohortLogger

out, log_model = sys.argv[1], {"all": "all", "true": True}[sys.argv[2]]
torch.manual_seed(0)

class Tiny(pl.LightningModule):
    def __init__(self, lr=0.05, hidden=4):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.Linear(hidden, 1))
    def forward(self, x):
        return self.net(x)
    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)   # through forward: watch counts it
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss
    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

x = torch.randn(64, 8)
ds = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
train = torch.utils.data.DataLoader(ds, batch_size=16)
val = torch.utils.data.DataLoader(ds, batch_size=32)
logger = CohortLogger(project="lt-integ", name="lt-" + sys.argv[2], log_model=log_model,
                      group="lightning")
assert logger.version is None          # nothing started yet
model = Tiny()
logger.watch(model, log="all", log_freq=2)
ckpt = ModelCheckpoint(dirpath=out, monitor="val_loss", save_top_k=-1, every_n_epochs=1,
                       filename="{epoch}")
trainer = pl.Trainer(max_epochs=3, logger=logger, callbacks=[ckpt], accelerator="cpu",
                     log_every_n_steps=1, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, train, val)
run = logger.experiment
assert isinstance(run, cohort.Run) and logger.version == run.id and logger.name == "lt-integ"
info = {"id": run.id, "best": os.path.basename(ckpt.best_model_path),
        "global_step": trainer.global_step}
run.finish()
print("RESULT " + json.dumps(info))
'''


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("log_model", ["all", "true"])
def test_lightning_logger(client, log_model):
    out = client.tmp / "ckpt"
    info = result(run_script(client, TRAIN, out, log_model))
    api = read_api(client)
    run = finished_run(api, f"lt-integ/{info['id']}")
    assert run.name == "lt-" + log_model and run.group == "lightning"
    assert run.config["lr"] == 0.05 and run.config["hidden"] == 4

    # 4 batches x 3 epochs: train_loss_step at every global step 0..11 (Lightning logs at the
    # step before the optimizer's increment), with trainer/global_step equal to the step.
    h = run.history()
    steps = h.loc[h["train_loss_step"].notna(), "step"].tolist()
    assert steps == list(range(12)), steps
    assert (h["trainer/global_step"] == h["step"]).all()
    assert info["global_step"] == 12
    ep = h.loc[h["train_loss_epoch"].notna(), ["step", "epoch"]]
    assert ep["step"].tolist() == [3, 7, 11] and ep["epoch"].tolist() == [0, 1, 2]
    assert h.loc[h["val_loss"].notna(), "step"].tolist() == [3, 7, 11]

    # watch("all", log_freq=2) on the module: histograms of both layers every 2nd training
    # forward pass (passes 2, 4, ..., 12 run at global steps 1, 3, ..., 11).
    hk = {k["key"] for k in run.histogram_keys()}
    assert {"parameters/net.0.weight", "gradients/net.1.weight"} <= hk, hk
    assert sorted(run.histograms("gradients/net.0.weight")["step"].tolist()) == [1, 3, 5, 7, 9, 11]

    # Checkpoints: every ModelCheckpoint file a version of model-<run id>, byte for byte.
    name = f"model-{info['id']}"
    versions = artifact_versions(api, name, "lt-integ", 3)
    checkpoints = sorted(out.glob("*.ckpt"))
    assert [p.name for p in checkpoints] == ["epoch=0.ckpt", "epoch=1.ckpt", "epoch=2.ckpt"]
    assert len(versions) == 3, versions
    by_file = {v.metadata["original_filename"]: v for v in versions}
    assert sorted(by_file) == [p.name for p in checkpoints]
    for p in checkpoints:
        v = by_file[p.name]
        assert v.type == "model"
        assert [(f.path, f.sha256) for f in v.files()] == [("model.ckpt", sha(p))]
        assert v.metadata["ModelCheckpoint"]["monitor"] == "val_loss", v.metadata
        assert isinstance(v.metadata["score"], float)
    got = by_file[info["best"]].get_path("model.ckpt", root=str(client.tmp / "dl"))
    assert open(got, "rb").read() == (out / info["best"]).read_bytes()
    aliases = {k: v.aliases for k, v in by_file.items()}
    assert "best" in aliases[info["best"]], aliases
    assert sum("best" in a for a in aliases.values()) == 1, aliases
    assert sum("latest" in a for a in aliases.values()) == 1, aliases
    newest = max(versions, key=lambda v: int(v.version[1:]))
    assert "latest" in newest.aliases


DDP = LIGHTNING_PATCH + r'''
import json, os, sys, torch
import lightning.pytorch as pl
import cohort
from cohort.integrations.lightning import CohortLogger
from lightning.fabric.loggers.logger import _DummyExperiment

mode = sys.argv[1] or None
torch.manual_seed(0)

class Tiny(pl.LightningModule):
    def __init__(self, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Linear(8, 1)
    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        self.log("rank", float(self.global_rank))   # this rank's own value
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

x = torch.randn(64, 8)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)),
                                   batch_size=16)
logger = CohortLogger(project="lt-ddp", name="ddp", mode=mode)
trainer = pl.Trainer(max_epochs=2, logger=logger, accelerator="cpu", devices=2,
                     strategy="ddp", log_every_n_steps=1, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny(), data)
assert torch.distributed.get_world_size() == 2
exp = logger.experiment
dummy = isinstance(exp, _DummyExperiment)
print("RESULT " + json.dumps({"rank": trainer.global_rank, "dummy": dummy,
                              "id": None if dummy else exp.id,
                              "label": None if dummy else exp.label}))
if not dummy:
    exp.finish()
# Both ranks leave together and the process group is torn down before the interpreter exits
# (torch 1.13's gloo threads otherwise may abort a rank at exit: "terminate called without an
# active exception", exit -6, when its peer has gone first).
torch.distributed.barrier()
torch.distributed.destroy_process_group()
'''


@pytest.mark.parametrize("mode", ["shared", "rank0"])
def test_lightning_logger_on_two_ranks(client, mode):
    env = {"GROUP_RANK": "0"}  # with RANK, LOCAL_RANK, ...: Lightning's torchelastic environment
    outs = run_ranks(client, DDP, 2, mode if mode == "shared" else "", env=env)
    infos = sorted((result(o) for o in outs), key=lambda i: i["rank"])
    api = read_api(client)
    if mode == "rank0":
        assert [i["dummy"] for i in infos] == [False, True]
        run = finished_run(api, f"lt-ddp/{infos[0]['id']}")
        assert [r.id for r in api.runs("lt-ddp")] == [run.id] and not run.shared
        h = run.history(keys=["train_loss", "rank"])
        assert h["step"].tolist() == [0, 1, 2, 3] and set(h["rank"]) == {0.0}
        return
    assert [i["dummy"] for i in infos] == [False, False]
    assert infos[0]["id"] == infos[1]["id"]
    assert [i["label"] for i in infos] == ["rank_0", "rank_1"]
    run = finished_run(api, f"lt-ddp/{infos[0]['id']}", writers=2)
    writers = {w["label"]: w for w in run.writers}
    assert writers["rank_0"]["primary"] and not writers["rank_1"]["primary"]
    assert run.config["lr"] == 0.05
    h = run.history(keys=["train_loss", "rank", "trainer/global_step"])
    for rank in (0, 1):
        part = h[h["writer"] == f"rank_{rank}"]
        assert part["step"].tolist() == [0, 1, 2, 3], part
        assert set(part["rank"]) == {float(rank)}        # each rank's own values


MEDIA = LIGHTNING_PATCH + r'''
import io, json
import numpy as np
from cohort.integrations.lightning import CohortLogger

logger = CohortLogger(project="lt-media", name="lt-media")
black, white = np.zeros((4, 5, 3), np.uint8), np.full((4, 5, 3), 255, np.uint8)
logger.log_image("samples", [black, white], step=3, caption=["black", "white"])
logger.log_table("preds", columns=["id", "label"], data=[[1, "cat"], [2, "dog"]], step=3)
try:
    logger.log_image("bad", [black], caption=["a", "b"])
except ValueError as e:
    print("REFUSED " + str(e))
run = logger.experiment
run.finish()
print("RESULT " + json.dumps({"id": run.id}))
'''


def test_lightning_logger_logs_images_and_tables(client):
    """WandbLogger's log_image/log_table, on CohortLogger: one step's set of images with their
    captions and a table, at the step given (with trainer/global_step), read back exactly."""
    from PIL import Image
    import io
    out = run_script(client, MEDIA, name="media.py")
    assert "REFUSED Expected 1 items but only found 2 for caption" in out, out
    run = finished_run(read_api(client), f"lt-media/{result(out)['id']}")
    rows = sorted(run.media("samples"), key=lambda r: r["index"])
    assert [(r["step"], r["index"], r["caption"], r["type"]) for r in rows] == [
        (3, 0, "black", "image"), (3, 1, "white", "image")], rows
    pixels = [Image.open(io.BytesIO(r.read())).getpixel((0, 0)) for r in rows]
    assert pixels[0][:3] == (0, 0, 0) and pixels[1][:3] == (255, 255, 255), pixels
    table = run.table("preds")
    assert table.columns.tolist() == ["id", "label"]
    assert table.values.tolist() == [[1, "cat"], [2, "dog"]]
    assert run.history()["trainer/global_step"].dropna().tolist() == [3]
