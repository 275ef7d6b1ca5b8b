"""cohort.integrations.transformers.CohortCallback with a real Hugging Face Trainer
(transformers 4.40 from PyPI, Debian's torch 1.13, a tiny GPT-2 built from a config): the
vendor's keys and renaming on the global-step axis, the config from TrainingArguments and the
model config, the summary, watch histograms, checkpoints as artifact versions byte for byte
with their aliases, an already started run, and two real ranks (gloo) in shared and in the
default rank-0 mode."""
import hashlib
import json
import pathlib

import pytest

from integ_helpers import (TINY_GPT2, artifact_versions, client, finished_run,  # noqa: F401
                           read_api, result, run_ranks, run_script)

pytestmark = pytest.mark.timeout(300)

COMMON = r'''
import json, os, sys, torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
import cohort
from cohort.integrations.transformers import CohortCallback
''' + TINY_GPT2

TRAIN = COMMON + r'''
out = sys.argv[1]
args = TrainingArguments(output_dir=out, max_steps=6, logging_steps=1, save_steps=3,
                         evaluation_strategy="steps", eval_steps=3, per_device_train_batch_size=4,
                         per_device_eval_batch_size=8, learning_rate=3e-3, run_name="hf-integ",
                         report_to="none", use_cpu=True, save_safetensors=True, disable_tqdm=True)
cb = CohortCallback(watch="all", log_freq=2, log_model="checkpoint", group="hf")
Trainer(model=model, args=args, train_dataset=Data(32), eval_dataset=Data(8),
        callbacks=[cb]).train()
run = cb.run
print("RESULT " + json.dumps({"id": run.id, "project": run.project, "name": run.name}))
run.finish()
'''


def sha(p):
    return hashlib.sha256(pathlib.Path(p).read_bytes()).hexdigest()


def test_trainer_logs_like_the_vendor_callback_with_checkpoints(client):
    out = client.tmp / "out"
    info = result(run_script(client, TRAIN, out, env={"COHORT_PROJECT": "hf-integ"}))
    assert info["project"] == "hf-integ" and info["name"] == "hf-integ"
    api = read_api(client)
    run = finished_run(api, f"hf-integ/{info['id']}")
    assert run.group == "hf"

    # Metrics: renamed as the vendor's callback does, on the Trainer's global-step axis.
    h = run.history()
    keys = set(h.columns)
    for k in ("train/loss", "train/learning_rate", "train/grad_norm", "train/epoch",
              "train/global_step", "eval/loss", "eval/runtime", "eval/samples_per_second"):
        assert k in keys, sorted(keys)
    assert not {"loss", "eval_loss", "train/train_runtime", "train/train_loss"} & keys
    assert not {k for k in keys if k.startswith("gradients/") or k.startswith("parameters/")}
    assert h["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert h["train/global_step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert h["train/loss"].notna().all()
    assert h.loc[h["eval/loss"].notna(), "step"].tolist() == [3, 6]

    # The end-of-training numbers: summary only.
    s = run.summary
    for k in ("train_runtime", "train_samples_per_second", "train_steps_per_second",
              "train_loss", "total_flos"):
        assert isinstance(s.get(k), (int, float)), (k, s)
    assert s["train/global_step"] == 6
    assert s["train/loss"] == h["train/loss"].iloc[-1]

    # Config: TrainingArguments over the model config.
    c = run.config
    assert c["learning_rate"] == 3e-3 and c["max_steps"] == 6 and c["save_steps"] == 3
    assert c["n_embd"] == 16 and c["vocab_size"] == 64 and c["model_type"] == "gpt2"
    assert c["run_name"] == "hf-integ" and c["output_dir"] == str(out)

    # watch("all", log_freq=2): every 2nd training forward pass, at that pass's global step.
    hk = {(k["key"]) for k in run.histogram_keys()}
    assert "gradients/lm_head.weight" in hk or "gradients/transformer.wte.weight" in hk, hk
    assert "parameters/transformer.h.0.attn.c_attn.weight" in hk, hk
    hist = run.histograms("parameters/transformer.h.0.attn.c_attn.weight")
    assert sorted(hist["step"].tolist()) == [2, 4, 6]
    grads = run.histograms("gradients/transformer.h.0.attn.c_attn.weight")
    assert sorted(grads["step"].tolist()) == [2, 4, 6]

    # Checkpoints: one version per saved directory, byte for byte, with the vendor's aliases.
    name = f"checkpoint-{info['id']}"
    versions = {v.version: v for v in artifact_versions(api, name, "hf-integ", 2)}
    assert sorted(versions) == ["v0", "v1"], versions
    for version, step in (("v0", 3), ("v1", 6)):
        v = versions[version]
        assert v.type == "model"
        assert f"checkpoint-{step}" in v.aliases, v.aliases
        assert ("latest" in v.aliases) == (step == 6), v.aliases
        assert v.metadata["global_step"] == step
        ckpt = out / f"checkpoint-{step}"
        local = {p.relative_to(ckpt).as_posix(): sha(p) for p in ckpt.rglob("*") if p.is_file()}
        assert {f.path: f.sha256 for f in v.files()} == local
        assert "model.safetensors" in local and "trainer_state.json" in local
        got = pathlib.Path(v.get_path("model.safetensors", root=str(client.tmp / f"dl{step}")))
        assert got.read_bytes() == (ckpt / "model.safetensors").read_bytes()
        assert v.run == info["id"]
    # The final model (log_model="checkpoint" includes the end): the last weights.
    final = artifact_versions(api, f"model-{info['id']}", "hf-integ", 1)[0]
    files = {f.path: f.sha256 for f in final.files()}
    assert {"config.json", "model.safetensors"} <= set(files), files
    assert files["model.safetensors"] == sha(out / "checkpoint-6" / "model.safetensors")


GIVEN_RUN = COMMON + r'''
out = sys.argv[1]
run = cohort.init(project="hf-given", name="mine", config={"mine": 1})
args = TrainingArguments(output_dir=out, max_steps=4, logging_steps=2, save_strategy="no",
                         per_device_train_batch_size=4, report_to="none", use_cpu=True,
                         disable_tqdm=True)
cb = CohortCallback(run=run)
trainer = Trainer(model=model, args=args, train_dataset=Data(16), eval_dataset=Data(8),
                  callbacks=[cb])
trainer.train()
metrics = trainer.evaluate()         # after training: at the last global step
assert cb.run is run
print("RESULT " + json.dumps({"id": run.id, "eval_loss": metrics["eval_loss"]}))
run.finish()
'''


def test_trainer_logs_into_a_run_started_by_the_script(client):
    info = result(run_script(client, GIVEN_RUN, client.tmp / "out"))
    api = read_api(client)
    run = finished_run(api, f"hf-given/{info['id']}")
    assert run.name == "mine"
    assert run.config["mine"] == 1 and run.config["max_steps"] == 4 and run.config["n_layer"] == 1
    h = run.history()
    assert h["step"].tolist() == [2, 4]
    assert h["train/loss"].notna().all()
    # evaluate() after train(): its row is the last global step's.
    assert h["eval/loss"].tolist()[-1] == info["eval_loss"]
    assert [a.name for a in run.logged_artifacts()] == []


DDP = COMMON + r'''
# GPT-2's bool attention-mask buffers cannot be broadcast by gloo (torch 1.13) when DDP syncs
# the module: a plain module with the Trainer's forward contract instead.
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(64, 16)
        self.head = torch.nn.Linear(16, 64)
    def forward(self, input_ids, labels=None):
        logits = self.head(self.emb(input_ids))
        loss = torch.nn.functional.cross_entropy(logits.view(-1, 64), labels.view(-1))
        return {"loss": loss, "logits": logits}

torch.manual_seed(0)
model = Net()
mode = sys.argv[2] or None
rank = int(os.environ["RANK"])
args = TrainingArguments(output_dir=sys.argv[1] + f"/r{rank}", max_steps=4, logging_steps=1,
                         save_strategy="no", per_device_train_batch_size=2, report_to="none",
                         use_cpu=True, disable_tqdm=True, ddp_backend="gloo",
                         run_name="hf-ddp")
cb = CohortCallback(project="hf-ddp", mode=mode)
Trainer(model=model, args=args, train_dataset=Data(16), callbacks=[cb]).train()
assert torch.distributed.is_initialized() and torch.distributed.get_world_size() == 2
run = cb.run
print("RESULT " + json.dumps({"rank": rank, "id": run.id if run else None,
                              "label": run.label if run else None}))
if run is not None:
    run.finish()
# Both ranks leave together and the process group is torn down before the interpreter exits
# (torch 1.13's gloo threads otherwise may abort a rank at exit: "terminate called without an
# active exception", exit -6, when its peer has gone first).
torch.distributed.barrier()
torch.distributed.destroy_process_group()
'''


@pytest.mark.parametrize("mode", ["shared", "rank0"])
def test_trainer_on_two_ranks(client, mode):
    outs = run_ranks(client, DDP, 2, client.tmp / "out", mode if mode == "shared" else "")
    infos = sorted((result(o) for o in outs), key=lambda i: i["rank"])
    api = read_api(client)
    if mode == "rank0":
        # The default: the main process logs, the other rank starts no run.
        assert infos[1]["id"] is None
        runs = list(api.runs("hf-ddp"))
        assert [r.id for r in runs] == [infos[0]["id"]]
        run = finished_run(api, f"hf-ddp/{infos[0]['id']}")
        assert not run.shared
        h = run.history(keys=["train/loss"])
        assert h["step"].tolist() == [1, 2, 3, 4]
        return
    # Shared: both ranks are writers of one run (the id rank 0 broadcast), each its own label.
    assert infos[0]["id"] == infos[1]["id"]
    assert [i["label"] for i in infos] == ["rank_0", "rank_1"]
    run = finished_run(api, f"hf-ddp/{infos[0]['id']}", writers=2)
    assert run.shared
    writers = {w["label"]: w for w in run.writers}
    assert set(writers) == {"rank_0", "rank_1"}
    assert writers["rank_0"]["primary"] and not writers["rank_1"]["primary"]
    assert run.name == "hf-ddp" and run.config["max_steps"] == 4
    h = run.history(keys=["train/loss", "train/global_step"])
    for label in ("rank_0", "rank_1"):
        part = h[h["writer"] == label]
        assert part["step"].tolist() == [1, 2, 3, 4], (label, part)
        assert part["train/global_step"].tolist() == [1, 2, 3, 4]
    # The loss the Trainer logs is averaged over the ranks: both writers logged the same values.
    assert h[h["writer"] == "rank_0"]["train/loss"].tolist() == \
        h[h["writer"] == "rank_1"]["train/loss"].tolist()
    assert json.dumps(run.config)  # plain JSON


METRICS = COMMON + r'''
import numpy as np
import warnings
warnings.simplefilter("always")   # every warning shown: the test counts them per key

def compute_metrics(p):
    # what users return besides numbers: per-class arrays, a confusion matrix as lists
    return {"acc": 0.25, "per_class": np.array([0.5, 0.25]), "confusion": [[1, 2], [3, 4]],
            "one": np.array(0.75)}

args = TrainingArguments(output_dir=sys.argv[1], max_steps=4, logging_steps=2, save_strategy="no",
                         evaluation_strategy="steps", eval_steps=2, per_device_train_batch_size=4,
                         per_device_eval_batch_size=8, report_to="none", use_cpu=True,
                         disable_tqdm=True)
cb = CohortCallback(project="hf-values")
trainer = Trainer(model=model, args=args, train_dataset=Data(16), eval_dataset=Data(8),
                  callbacks=[cb], compute_metrics=compute_metrics)
trainer.train()
final = trainer.evaluate()
print("RESULT " + json.dumps({"id": cb.run.id, "final_acc": final["eval_acc"]}))
cb.run.finish()
'''


def test_trainer_with_non_scalar_metrics_keeps_training(client):
    proc = client.run([__import__("integ_helpers").write_script(client, "metrics.py", METRICS),
                       client.tmp / "out"], timeout=180)
    assert proc.returncode == 0, proc.stderr[-5000:]
    info = result(proc.stdout)
    assert info["final_acc"] == 0.25
    # Arrays and nested lists of numbers are histograms, as the vendor's callback logs them
    # (they were left out with a warning before run.log took them).
    for key in ("eval/per_class", "eval/confusion"):
        assert f"{key!r} is not logged" not in proc.stderr, proc.stderr[-5000:]
    assert "'eval/one'" not in proc.stderr  # a 0-d array is a number
    run = finished_run(read_api(client), f"hf-values/{info['id']}")
    h = run.history()
    assert h.loc[h["eval/acc"].notna(), "step"].tolist() == [2, 4]
    assert h.loc[h["eval/one"].notna(), "eval/one"].tolist() == [0.75, 0.75]
    assert h["train/loss"].notna().sum() == 2
    assert not {"eval/per_class", "eval/confusion"} & set(h.columns)
    per_class = run.histograms("eval/per_class")
    assert per_class["step"].tolist()[:2] == [2, 4], per_class
    assert all(sum(c) == 2 for c in per_class["counts"]), per_class  # two classes each time
    assert all(sum(c) == 4 for c in run.histograms("eval/confusion")["counts"])
