"""Helpers of the integration tests: real training scripts (transformers, Lightning, accelerate
from PyPI, Debian's torch, tiny models built from configs: no downloads) run as real processes
with the package from this source tree against a real `cohort server` (tests/conftest.py) and
the real node agent; what they logged is read back through `cohort.Api`."""
import os
import pathlib
import socket
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "distributed"))
from dist_helpers import Client, assert_ok, client, wait_until  # noqa: E402,F401

import cohort  # noqa: E402  (the source tree's package: dist_helpers put it first on sys.path)

ROOT = HERE.parent.parent
assert pathlib.Path(cohort.__file__).resolve().is_relative_to(ROOT / "python"), cohort.__file__

# Lightning's LightningModule imports torch.distributed._shard, which fails on Python 3.11 with
# Debian's torch 1.13 unless Lightning believes torch >= 2.1 (tests/compat does the same).
LIGHTNING_PATCH = """
import lightning.pytorch.core.module as _lm
_lm._TORCH_GREATER_EQUAL_2_1 = True
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_api(client):
    return cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])


def write_script(client, name, code):
    path = client.tmp / name
    path.write_text(code)
    return path


def run_script(client, code, *args, env=None, timeout=120, name="train.py"):
    """Runs a training script in a fresh interpreter; asserts exit status 0; returns stdout."""
    path = write_script(client, name, code)
    t0 = time.monotonic()
    proc = client.run([path, *args], env=env, timeout=timeout)
    assert_ok(proc)
    print(f"{name}: {time.monotonic() - t0:.1f} s")
    return proc.stdout


def run_ranks(client, code, nproc, *args, env=None, timeout=120, name="train_ddp.py"):
    """Starts `nproc` ranks of a script (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT: what
    torchrun gives, without its Python 3.11 crash and without TORCHELASTIC_RUN_ID); waits for
    all; asserts each exited 0; returns their stdouts."""
    path = write_script(client, name, code)
    port = free_port()
    procs = []
    for rank in range(nproc):
        e = dict(env or {})
        e.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(nproc),
                  "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": str(port)})
        procs.append(client.popen([path, *args], env=e))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, (code_, out, err) in enumerate(outs):
        assert code_ == 0, f"rank {rank}: exit {code_}\n{out[-3000:]}\n{err[-5000:]}"
    return [o for _, o, _ in outs]


def result(stdout, marker="RESULT "):
    """The JSON a script printed after `marker`."""
    import json
    for line in stdout.splitlines():
        if line.startswith(marker):
            return json.loads(line[len(marker):])
    raise AssertionError(f"no {marker!r} line in:\n{stdout[-3000:]}")


def finished_run(api, path, writers=1, timeout=30):
    """The run once the server has it finished (with `writers` writers finished)."""
    def done():
        try:
            r = api.run(path)
        except cohort.NotFound:
            return None
        ws = r.writers
        if r.state == "finished" and len(ws) == writers and all(
                w["state"] == "finished" for w in ws):
            return r
        return None
    return wait_until(done, timeout=timeout, what=f"run {path} finished")


def artifact_versions(api, name, project, count, timeout=30):
    """The versions of an artifact once `count` are committed (finish() waits for uploads only
    within its timeout; the agent may commit the last ones after the process exited)."""
    def ready():
        try:
            vs = api.artifact_versions(name, project=project)
        except cohort.NotFound:
            return None
        return vs if len(vs) >= count else None
    return wait_until(ready, timeout=timeout, what=f"{count} versions of {project}/{name}")


# A tiny GPT-2 built from a config (no download) and a dataset of shifted token ranges, for the
# scripts that train it with the transformers Trainer (after `import torch` and
# `from transformers import GPT2Config, GPT2LMHeadModel`).
TINY_GPT2 = r'''
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2))

class Data(torch.utils.data.Dataset):
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i):
        ids = torch.tensor([(i + j) % 64 for j in range(16)])
        return {"input_ids": ids, "labels": ids}
'''
