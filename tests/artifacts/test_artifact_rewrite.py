"""A file the job saves again right after `run.log_artifact` returned (a checkpoint written every
epoch to the same path), through the real SDK, agent and server: each version holds the bytes the
file had at its call, or fails naming the file; never a mix, never an empty file in silence
(docs/artifacts.md, "Policies")."""
import hashlib
import json
import os

import art_helpers  # noqa: F401  (paths: tests/, tests/python, tests/distributed)
from dist_helpers import client  # noqa: F401  (fixture)

REWRITTEN = ("big.bin was rewritten after log_artifact returned and before it was copied (Cohort "
             "copies large files in the background): log it after the file is complete, save "
             "each checkpoint under its own name, or pass policy='immutable' only if the file "
             "is never changed")

SCRIPT = r"""
import hashlib, json, os, sys, time
import cohort
import cohort.artifacts as arts

out = {}
sha = lambda b: hashlib.sha256(b).hexdigest()
run = cohort.init(project="rw")

# Small checkpoints saved every epoch to one path, each logged right after it was written.
logged = []
for epoch in range(4):
    data = os.urandom(1000) + bytes([epoch])
    with open("model.pt", "wb") as f:
        f.write(data)
    a = cohort.Artifact("small", "model", metadata={"epoch": epoch})
    a.add_file("model.pt")
    run.log_artifact(a)
    logged.append((a, sha(data)))
open("model.pt", "wb").close()  # the next save has truncated it: size 0
out["small"] = [(a.wait(timeout=60).manifest["model.pt"]["sha256"], h) for a, h in logged]

def big(name, rewrite):
    A, B = os.urandom(40 << 20), os.urandom(40 << 20)
    with open("big.bin", "wb") as f:
        f.write(A)
    a = cohort.Artifact(name, "model")
    a.add_file("big.bin")
    run.log_artifact(a)
    rewrite(B)
    try:
        a.wait(timeout=120)
        return {"sha": a.manifest["big.bin"]["sha256"], "size": a.size, "A": sha(A)}
    except cohort.ArtifactError as e:
        return {"error": str(e), "A": sha(A)}

def in_place(B):
    time.sleep(0.01)
    with open("big.bin", "r+b") as f:
        f.write(B)

def truncated(B):
    with open("big.bin", "wb") as f:
        f.write(B[:1000])

out["torn"] = big("torn", in_place)
# The background copy certainly starts after the save: it must fail, naming the file.
slow_owner = arts._write_owner
arts._write_owner = lambda staging: (time.sleep(1), slow_owner(staging))
out["late"] = big("late", truncated)
arts._write_owner = slow_owner
run.finish()
print("OUT", json.dumps(out), flush=True)
"""


def test_a_file_rewritten_after_log_artifact_is_committed_as_it_was_or_fails(client, tmp_path):
    script = tmp_path / "rewrite.py"
    script.write_text(SCRIPT)
    proc = client.run([script], timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.split("OUT ", 1)[1])
    # Small files are copied at the call: every epoch's version holds that epoch's bytes.
    for got, want in out["small"]:
        assert got == want, out["small"]
    # Large ones: the bytes of the call (the server checked them against the digest), or a
    # failed version that says what happened.
    torn = out["torn"]
    if "error" in torn:
        assert REWRITTEN in torn["error"], torn
    else:
        assert torn["sha"] == torn["A"] and torn["size"] == 40 << 20, torn
    assert REWRITTEN in out["late"].get("error", ""), out["late"]
    assert f"artifact late was not logged: {REWRITTEN}" in proc.stderr, proc.stderr[-4000:]
