"""Checkpoints the frameworks delete or rewrite while Cohort reads them in the background
(hashing made slow here): the transformers Trainer's rotation (save_strategy="epoch",
save_total_limit=1 with load_best_model_at_end, which deletes the last checkpoint before
on_train_end) and Lightning's ModelCheckpoint (log_model="all": the previous best deleted,
last.ckpt rewritten in place). Every version must be committed with the bytes the framework had
saved when it was logged."""
import pytest

from integ_helpers import (LIGHTNING_PATCH, TINY_GPT2, artifact_versions,  # noqa: F401
                           client, finished_run, read_api, result, run_script)

pytestmark = pytest.mark.timeout(300)

SLOW_HASH = r'''
import hashlib, pathlib, time
import cohort.artifacts as _arts
_orig_hash = _arts._hash_file
def _slow_hash(path, copy_to):
    time.sleep(0.4)        # a big checkpoint on a slow disk: the framework goes on meanwhile
    return _orig_hash(path, copy_to)
_arts._hash_file = _slow_hash

def sha(p):
    return hashlib.sha256(pathlib.Path(p).read_bytes()).hexdigest()
'''

HF = SLOW_HASH + r'''
import json, os, sys, torch
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback,
                          TrainingArguments)
from cohort.integrations.transformers import CohortCallback
''' + TINY_GPT2 + r'''
saved = {}
class Record(TrainerCallback):   # before CohortCallback: the files as the Trainer saved them
    def on_save(self, args, state, control, **kw):
        d = pathlib.Path(args.output_dir) / f"checkpoint-{state.global_step}"
        saved[state.global_step] = {p.relative_to(d).as_posix(): sha(p)
                                    for p in d.rglob("*") if p.is_file()}

scores = iter(range(100))
args = TrainingArguments(output_dir=sys.argv[1], num_train_epochs=3, save_strategy="epoch",
                         evaluation_strategy="epoch", save_total_limit=1,
                         load_best_model_at_end=True, metric_for_best_model="score",
                         greater_is_better=False, per_device_train_batch_size=4,
                         report_to="none", use_cpu=True, disable_tqdm=True)
cb = CohortCallback(project="races", log_model="checkpoint")
Trainer(model=model, args=args, train_dataset=Data(16), eval_dataset=Data(4),
        compute_metrics=lambda p: {"score": float(next(scores))},   # the first is the best
        callbacks=[Record(), cb]).train()
left = sorted(p.name for p in pathlib.Path(sys.argv[1]).glob("checkpoint-*"))
print("RESULT " + json.dumps({"id": cb.run.id, "saved": saved, "left": left}))
cb.run.finish()
'''


def test_trainer_checkpoints_rotated_while_hashed_are_committed_intact(client):
    info = result(run_script(client, HF, client.tmp / "out", timeout=240))
    saved = {int(k): v for k, v in info["saved"].items()}
    assert sorted(saved) == [4, 8, 12]
    assert info["left"] == ["checkpoint-4"]   # the Trainer deleted 8 and 12 (the best is 4)
    api = read_api(client)
    finished_run(api, f"races/{info['id']}")
    versions = artifact_versions(api, f"checkpoint-{info['id']}", "races", 3)
    by_step = {v.metadata["global_step"]: v for v in versions}
    assert sorted(by_step) == [4, 8, 12]
    for step, files in saved.items():
        v = by_step[step]
        assert f"checkpoint-{step}" in v.aliases
        assert {f.path: f.sha256 for f in v.files()} == files, step


LT = LIGHTNING_PATCH + SLOW_HASH + r'''
import json, os, sys, torch
import lightning.pytorch as pl
from lightning.pytorch.callbacks import ModelCheckpoint
from cohort.integrations.lightning import CohortLogger

torch.manual_seed(0)

class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)
    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)
    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

expected = []   # (file name, its SHA-256 when logged), in log order
class Recording(CohortLogger):
    def after_save_checkpoint(self, cb):
        now = {p: sha(p) for p in pathlib.Path(cb.dirpath).glob("*.ckpt")}
        run = self.experiment
        before = len(run._artifacts)
        super().after_save_checkpoint(cb)
        for art in run._artifacts[before:]:
            src = pathlib.Path(art._entries["model.ckpt"]["source"])
            expected.append([src.name, now[src]])

x = torch.randn(64, 8)
ds = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
logger = Recording(project="races", log_model="all")
ckpt = ModelCheckpoint(dirpath=sys.argv[1], monitor="val_loss", save_top_k=1, save_last=True,
                       filename="{epoch}")
trainer = pl.Trainer(max_epochs=4, logger=logger, callbacks=[ckpt], accelerator="cpu",
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny(), torch.utils.data.DataLoader(ds, batch_size=16),
            torch.utils.data.DataLoader(ds, batch_size=32))
run = logger.experiment
errors = [str(a._error) for a in run._artifacts if a._error is not None]
left = sorted(p.name for p in pathlib.Path(sys.argv[1]).glob("*.ckpt"))
print("RESULT " + json.dumps({"id": run.id, "expected": expected, "errors": errors,
                              "left": left}))
run.finish()
'''


def test_lightning_checkpoints_deleted_or_rewritten_while_hashed_are_committed_intact(client):
    info = result(run_script(client, LT, client.tmp / "ckpt", timeout=240))
    assert info["errors"] == []
    expected = info["expected"]
    names = [name for name, _ in expected]
    assert names.count("last.ckpt") == 4, names          # rewritten in place each epoch
    assert len(set(names) - {"last.ckpt"}) >= 2, names    # earlier bests, since deleted
    assert len(info["left"]) == 2, info["left"]
    api = read_api(client)
    finished_run(api, f"races/{info['id']}")
    # A version with the bytes of the latest one is that version (the server's rule): the
    # best checkpoint and last.ckpt of one epoch may be the same bytes.
    digests = []
    for _, digest in expected:
        if not digests or digests[-1] != digest:
            digests.append(digest)
    versions = artifact_versions(api, f"model-{info['id']}", "races", len(digests))
    got = sorted(versions, key=lambda v: int(v.version[1:]))
    assert [v.files()[0].sha256 for v in got] == digests
    assert len(digests) >= 5, expected          # each epoch's last.ckpt differs

