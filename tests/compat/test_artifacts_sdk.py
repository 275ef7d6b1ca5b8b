"""The vendor's Python SDK logs and uses artifacts against Cohort, unchanged (docs/compat.md,
"Artifacts"): `run.log_artifact` becomes a Cohort artifact version that Cohort's API serves
byte for byte, an unchanged artifact logged again is the same version with nothing uploaded,
and `use_artifact(...).download()` in another run gets verified files and records lineage."""
import hashlib
import pathlib
import urllib.error
import urllib.request

import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

LOG = r'''
import pathlib, sys, wandb
root, project = pathlib.Path(sys.argv[1]), sys.argv[2]
run = wandb.init(project=project, id="producer")
art = wandb.Artifact("ckpt", type="model", description="epoch 1", metadata={"epoch": 1})
art.add_dir(str(root / "model"))
with art.new_file("notes/readme.txt") as f:
    f.write("trained on digits\n")
run.log_artifact(art, aliases=["best"])
art.wait()
print("LOGGED", art.version, art.digest)
again = wandb.Artifact("ckpt", type="model", description="epoch 1", metadata={"epoch": 1})
again.add_dir(str(root / "model"))
with again.new_file("notes/readme.txt") as f:
    f.write("trained on digits\n")
run.log_artifact(again)
again.wait()
print("AGAIN", again.version)
run.finish()
'''

USE = r'''
import pathlib, sys, wandb
out, project = pathlib.Path(sys.argv[1]), sys.argv[2]
run = wandb.init(project=project, id="consumer")
art = run.use_artifact("ckpt:best")
path = art.download(root=str(out))
print("DOWNLOADED", art.version, sorted(p.relative_to(path).as_posix()
                                        for p in pathlib.Path(path).rglob("*") if p.is_file()))
run.finish()
'''


def cohort_get(server, path):
    req = urllib.request.Request(server.url + path)
    req.add_header("Authorization", "Bearer " + server.config["api_key"])
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def test_log_artifact_then_use_artifact_download(server, api, tmp_path):
    import json
    model = tmp_path / "data" / "model"
    (model / "sub").mkdir(parents=True)
    weights = bytes(range(256)) * 4000  # 1 MB
    (model / "weights.bin").write_bytes(weights)
    (model / "sub" / "config.json").write_text('{"layers": 4}')
    env = sdk_env(server, tmp_path)
    r = run_python(LOG, env, tmp_path, args=(tmp_path / "data", "arts"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "LOGGED v0" in r.stdout, r.stdout + r.stderr
    assert "AGAIN v0" in r.stdout, r.stdout + r.stderr

    entity = json.loads(cohort_get(server, "/api/v1/viewer"))["entity"]
    base = f"/api/v1/artifacts/{entity}/arts/ckpt"
    version = json.loads(cohort_get(server, f"{base}/best"))
    assert version["version"] == "v0" and version["type"] == "model"
    assert version["aliases"] == ["best", "latest"]
    assert version["metadata"] == {"epoch": 1} and version["description"] == "epoch 1"
    assert version["produced_by"]["run"] == "producer"
    files = {f["path"]: f for f in version["files"]}
    assert sorted(files) == ["notes/readme.txt", "sub/config.json", "weights.bin"]
    assert files["weights.bin"]["sha256"] == hashlib.sha256(weights).hexdigest()
    assert cohort_get(server, files["weights.bin"]["url"]) == weights
    assert len(json.loads(cohort_get(server, f"{base}/versions"))["versions"]) == 1

    # Another process, another cache: the files come from the server, checked by the SDK.
    env2 = sdk_env(server, tmp_path / "consumer")
    out = tmp_path / "downloaded"
    r = run_python(USE, env2, tmp_path, args=(out, "arts"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DOWNLOADED v0 ['notes/readme.txt', 'sub/config.json', 'weights.bin']" in r.stdout, \
        r.stdout + r.stderr
    assert (out / "weights.bin").read_bytes() == weights
    used = json.loads(cohort_get(server, f"{base}/v0"))["used_by"]
    assert [u["run"] for u in used] == ["consumer"]


DOWNLOAD_COHORT_VERSION = r'''
import pathlib, sys, wandb
out, project = pathlib.Path(sys.argv[1]), sys.argv[2]
art = wandb.Api().artifact(f"{project}/dataset:latest")
path = art.download(root=str(out))
print("DOWNLOADED", art.version, sorted(p.relative_to(path).as_posix()
                                        for p in pathlib.Path(path).rglob("*") if p.is_file()))
'''


def upload_blob(api, entity, data):
    digest, size = hashlib.sha256(data).hexdigest(), len(data)
    status, st = api.get(f"/api/v1/blobs/{entity}/{digest}?size={size}")
    assert status == 200, st
    part = st["part_bytes"]
    for n in range((size + part - 1) // part):
        status, body = api.put(f"/api/v1/blobs/{entity}/{digest}/parts/{n}?size={size}",
                               raw=data[n * part:(n + 1) * part],
                               headers={"Content-Type": "application/octet-stream"})
        assert status == 200, body
    status, body = api.post(f"/api/v1/blobs/{entity}/{digest}/complete", {"size": size})
    assert status == 200 and body["stored"], body
    return digest


def test_vendor_sdk_downloads_a_version_logged_by_cohort(server, api, tmp_path):
    """A version logged through Cohort's own API (as Cohort's SDK and `cohort artifact put` do)
    has no W&B manifest: the server makes one, with each file's real MD5 (computed once by
    reading the blob, then recorded), and the vendor's SDK downloads the files byte for byte."""
    import base64
    import json
    entity = json.loads(cohort_get(server, "/api/v1/viewer"))["entity"]
    files = {"train/shard-0.bin": bytes(range(256)) * 36000,  # 9 MB: more than one 8 MiB read
             "labels.txt": b"cat\ndog\n"}
    body = {"type": "dataset", "aliases": ["prod"], "metadata": {"rows": 2},
            "files": [{"path": p, "sha256": upload_blob(api, entity, d), "size": len(d)}
                      for p, d in files.items()]}
    status, answer = api.post(f"/api/v1/artifacts/{entity}/cv/dataset", body)
    assert status in (200, 201), answer

    out = tmp_path / "out"
    env = sdk_env(server, tmp_path)
    for attempt in range(2):  # the second time the MD5s are looked up, not computed
        r = run_python(DOWNLOAD_COHORT_VERSION, env, tmp_path, args=(out, "cv"))
        assert r.returncode == 0 and "DOWNLOADED" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]
        assert "DOWNLOADED v0 ['labels.txt', 'train/shard-0.bin']" in r.stdout, r.stdout
        for path, data in files.items():
            assert (out / path).read_bytes() == data, path
        for p in [p for p in out.rglob("*") if p.is_file()]:
            p.unlink()
    # What the server made: the W&B layout, real MD5s and sizes.
    gql = {"query": "query($e:String!,$p:String!){project(name:$p,entityName:$e){"
                    "artifact(name:\"dataset:v0\"){currentManifest{file{directUrl}}}}}",
           "variables": {"e": entity, "p": "cv"}}
    status, answer = api.post("/graphql", gql)
    assert status == 200, answer
    url = answer["data"]["project"]["artifact"]["currentManifest"]["file"]["directUrl"]
    with urllib.request.urlopen(url, timeout=30) as resp:  # no credentials: the URL is signed
        manifest = json.loads(resp.read())
    assert manifest["storagePolicy"] == "wandb-storage-policy-v1"
    assert manifest["contents"] == {
        p: {"digest": base64.b64encode(hashlib.md5(d).digest()).decode(), "size": len(d)}
        for p, d in files.items()}
    # A tampered signature is refused.
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url[:-2] + ("00" if not url.endswith("00") else "11"), timeout=30)
    assert err.value.code == 401


RELOG = r'''
import pathlib, sys, wandb
root, project, run_id = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
run = wandb.init(project=project, id=run_id)
art = wandb.Artifact("ds", type="dataset")
art.add_dir(str(root))
run.log_artifact(art, aliases=["from-" + run_id])
art.wait()
print("LOGGED", art.version)
run.finish()
'''


def test_identical_content_logged_by_another_run_records_its_output_edge(server, api, tmp_path):
    """Two runs log the same content: one version (the second client uploads nothing), and the
    second run is recorded as an output of it too (as Cohort's own SDK's unchanged re-log is),
    with its alias."""
    import json
    data = tmp_path / "content"
    data.mkdir()
    (data / "a.txt").write_text("same content\n")
    entity = json.loads(cohort_get(server, "/api/v1/viewer"))["entity"]
    for run_id in ("first", "second"):
        r = run_python(RELOG, sdk_env(server, tmp_path / run_id), tmp_path,
                       args=(data, "relog", run_id))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "LOGGED v0" in r.stdout, r.stdout + r.stderr
    base = f"/api/v1/artifacts/{entity}/relog/ds"
    assert len(json.loads(cohort_get(server, f"{base}/versions"))["versions"]) == 1
    version = json.loads(cohort_get(server, f"{base}/v0"))
    assert version["aliases"] == ["from-first", "from-second", "latest"], version
    for run_id in ("first", "second"):
        arts = json.loads(cohort_get(server, f"/api/v1/runs/{entity}/relog/{run_id}/artifacts"))
        assert [(a["name"], a["version"], a["direction"]) for a in arts["artifacts"]] == \
            [("ds", "v0", "output")], (run_id, arts)
