"""Checkpoint versions are committed in the order they were logged (what the integrations'
"latest" and "best" aliases rely on), even when a later, smaller one finishes hashing first:
before, each version went to the agent when its own hashing thread finished, so a small
checkpoint logged after a large one became the older version and took "latest" and "best"
back from it."""
import pytest

from integ_helpers import client, finished_run, read_api, result, run_script  # noqa: F401

pytestmark = pytest.mark.timeout(120)

CODE = r'''
import json, os, sys, cohort
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
big, small = os.path.join(d, "big.bin"), os.path.join(d, "small.bin")
with open(big, "wb") as f:
    f.write(os.urandom(1 << 20) * 96)          # 96 MiB: hashing takes a while
with open(small, "wb") as f:
    f.write(b"small")
run = cohort.init(project="order")
arts = []
for i, path in enumerate([big, small, small + "2"]):
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(b"third")
    a = cohort.Artifact("ckpt", type="model", metadata={"index": i})
    a.add_file(path, name="model.bin")
    run.log_artifact(a, aliases=["best"])
    arts.append(a)
for a in arts:
    a.wait(timeout=60)
print("RESULT " + json.dumps({"id": run.id, "versions": [a.version for a in arts]}))
run.finish()
'''


def test_versions_commit_in_log_order(client):
    info = result(run_script(client, CODE, client.tmp / "files"))
    assert info["versions"] == ["v0", "v1", "v2"]
    api = read_api(client)
    finished_run(api, f"order/{info['id']}")
    versions = {v.version: v for v in api.artifact_versions("ckpt", project="order")}
    assert {k: v.metadata["index"] for k, v in versions.items()} == {"v0": 0, "v1": 1, "v2": 2}
    assert sorted(versions["v2"].aliases) == ["best", "latest"]
    assert versions["v0"].aliases == [] and versions["v1"].aliases == []
