"""Helpers of the artifact read-side tests: versions logged into a real `cohort server` straight
through its HTTP API (docs/artifacts.md: blob status, parts, complete, commit), and the blob
files of the server's local blob store."""
import hashlib
import pathlib
import sys

_HERE = pathlib.Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE.parent / "python", _HERE.parent / "distributed"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from conftest import byte_pattern as pattern  # noqa: E402,F401  (its name in these tests)
import sdk_helpers  # noqa: E402,F401  (the cohort package from the source tree, or a build hint)

PART = 8 << 20


def sha(data):
    return hashlib.sha256(data).hexdigest()


def upload_blob(api, entity, data):
    """Makes `entity` hold the blob of `data`, in parts, as any client does."""
    digest, size = sha(data), len(data)
    status, st = api.get(f"/api/v1/blobs/{entity}/{digest}?size={size}")
    assert status == 200, st
    if st["stored"]:
        return digest
    part_bytes = st["part_bytes"]
    for n in range((size + part_bytes - 1) // part_bytes):
        if n in st["parts"]:
            continue
        chunk = data[n * part_bytes:(n + 1) * part_bytes]
        status, body = api.put(f"/api/v1/blobs/{entity}/{digest}/parts/{n}?size={size}",
                               raw=chunk, headers={"Content-Type": "application/octet-stream"})
        assert status == 200, body
    status, body = api.post(f"/api/v1/blobs/{entity}/{digest}/complete", {"size": size})
    assert status == 200 and body["stored"], body
    return digest


def log_version(api, entity, project, name, files, type="model", aliases=(), metadata=None,
                description="", refs=(), run=None, writer=None):
    """Uploads `files` ({path: bytes}) and commits them as a version; returns the answer."""
    manifest = [{"path": p, "sha256": upload_blob(api, entity, d), "size": len(d)}
                for p, d in files.items()]
    manifest += list(refs)
    body = {"type": type, "aliases": list(aliases), "metadata": metadata or {},
            "description": description, "files": manifest}
    if run:
        body["run"] = run
        body["writer"] = writer or ""
    status, answer = api.post(f"/api/v1/artifacts/{entity}/{project}/{name}", body)
    assert status in (200, 201), answer
    return answer


def stored_blob(server, digest):
    """The file of blob `digest` in the server's local blob store."""
    matches = list((server.data_dir / "blobs" / "sha256").rglob(digest))
    assert len(matches) == 1, (digest, matches)
    return matches[0]
