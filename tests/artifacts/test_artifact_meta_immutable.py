"""Artifact metadata of numpy and datetime values, and a file added with policy="immutable" that
changes before its upload, through the real SDK, agent and server (docs/python-api.md)."""
import json

import art_helpers  # noqa: F401  (paths: tests/, tests/python, tests/distributed)
from dist_helpers import client  # noqa: F401  (fixture)

SCRIPT = r"""
import datetime, json, os, sys
import numpy as np
import cohort

run = cohort.init(project="mi", settings=cohort.Settings(finish_timeout=120))
meta = {"acc": np.float32(0.5), "n": np.int64(3), "arr": np.arange(3),
        "when": datetime.datetime(2024, 1, 1), "nested": {"b": np.bool_(True)}}
a = cohort.Artifact("meta", "model", metadata=meta)
with a.new_file("x.txt") as f:
    f.write("hello")
run.log_artifact(a).wait(timeout=60)

with open("big.bin", "wb") as f:
    f.write(os.urandom(3 * (8 << 20)))
b = cohort.Artifact("bigimm", "model")
b.add_file("big.bin", policy="immutable")
run.log_artifact(b)
b._thread.join()  # hashed and handed to the agent, which uploads it part by part
with open("big.bin", "r+b") as f:  # the last part, not uploaded yet
    f.seek(3 * (8 << 20) - 100)
    f.write(b"Z" * 100)
try:
    b.wait(timeout=120)
    print("OUT", json.dumps({"committed": b.version}), flush=True)
except cohort.ArtifactError as e:
    print("OUT", json.dumps({"error": str(e)}), flush=True)
run.finish()
"""


def test_numpy_metadata_is_kept_and_an_immutable_file_changed_says_what_to_do(client, tmp_path):
    script = tmp_path / "meta.py"
    script.write_text(SCRIPT)
    proc = client.run([script], timeout=300, env={"COHORT_ARTIFACT_PARTS": "1",
                                                  "COHORT_ARTIFACT_PART_DELAY_MS": "300"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    version = client.get(f"/api/v1/artifacts/{client.entity}/mi/meta/v0")
    assert version["metadata"] == {"acc": 0.5, "n": 3, "arr": [0, 1, 2],
                                   "when": "2024-01-01T00:00:00", "nested": {"b": True}}, version
    out = json.loads(proc.stdout.split("OUT ", 1)[1])
    assert out.get("error") == (
        "artifact bigimm: big.bin changed after log_artifact (policy='immutable' uploads the "
        "file in place): log it again, or use the default policy='mutable'"), out
