"""Downloads against a real `cohort server` that leave nothing behind when killed midway, and a
blob cache entry damaged on disk (docs/python-api.md, "Artifacts")."""
import os
import pathlib
import signal
import subprocess
import sys

import art_helpers  # noqa: F401  (paths: tests/, tests/python, tests/distributed)
from art_helpers import log_version, sha
from test_artifact_read import BIG, FILES, PROJECT, cache, capi, entity, srv, tree  # noqa: F401

import cohort

KILLED = r"""
import sys, time
import cohort
from cohort import artifact_download as dl
dl.LARGE_COPY_BYTES = dl.CHUNK_BYTES  # written into the cache and the file in one pass
real = dl._fetch_range
def slow(*args, **kwargs):
    got = real(*args, **kwargs)
    print("RANGE", flush=True)
    time.sleep(60)  # killed here, its file half written
    return got
dl._fetch_range = slow
api = cohort.Api(base_url=sys.argv[1], api_key=sys.argv[2])
api.artifact(sys.argv[3]).download(sys.argv[4], progress=False)
"""


def test_a_download_killed_midway_leaves_no_temporary_file_after_the_next(
        srv, entity, capi, cache, tmp_path):
    log_version(srv.api(), entity, PROJECT, "resnet", {"model.bin": BIG})
    out = tmp_path / "out"
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(cohort.__file__).parent.parent))
    proc = subprocess.Popen([sys.executable, str(script), srv.url, srv.config["api_key"],
                             f"{entity}/{PROJECT}/resnet:v0", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("RANGE"), proc.stderr.read()[-4000:]
        left = [n for n in os.listdir(out) if ".cohort-tmp" in n]
        assert left, os.listdir(out)  # the file being written, beside its place
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    root = capi.artifact(f"{entity}/{PROJECT}/resnet:v0").download(str(out), progress=False)
    assert tree(root) == {"model.bin": BIG}  # and no temporary file


def test_a_cache_entry_damaged_with_bytes_of_its_size_is_fetched_again(
        srv, entity, capi, cache, tmp_path):
    log_version(srv.api(), entity, PROJECT, "ds", FILES, type="dataset")
    v = capi.artifact(f"{entity}/{PROJECT}/ds:v0")
    v.download(str(tmp_path / "a"), progress=False)
    for data in (BIG, FILES["config.json"]):
        blob = cache / "artifacts" / "sha256" / sha(data)[:2] / sha(data)
        blob.chmod(0o644)
        blob.write_bytes(b"Y" * len(data))
    root = v.download(str(tmp_path / "b"), progress=False)
    assert tree(root) == FILES
    assert v.last_download["fetched_bytes"] == len(BIG) + len(FILES["config.json"])
    blob = cache / "artifacts" / "sha256" / sha(BIG)[:2] / sha(BIG)
    assert blob.read_bytes() == BIG  # the cache holds the blob again
