"""cohort.Api's media rows without a server: where ``MediaFile.download`` writes (always under
its root, whatever the key or writer label), over a stub transport."""
import hashlib
import io
import os

import pytest

import sdk_helpers  # noqa: F401  (puts the package on the path)
from cohort.api_media import MediaFile


class _Transport:
    """Answers every stream with `data`."""

    def __init__(self, data):
        self.data = data

    def stream(self, path):
        return io.BytesIO(self.data)


def _row(key, writer="rank_0", step=3, index=0):
    data = b"png bytes"
    return MediaFile(_Transport(data), {
        "key": key, "writer": writer, "step": step, "index": index, "mime": "image/png",
        "sha256": hashlib.sha256(data).hexdigest(), "url": "/api/v1/runs/x/media/y"})


def _inside(root, path):
    root, path = os.path.realpath(root), os.path.realpath(path)
    return os.path.commonpath([root, path]) == root


@pytest.mark.parametrize("key,writer,want", [
    ("samples", "rank_1", "samples/rank_1/3_0.png"),
    ("../../x", "rank_0", "%2E%2E/%2E%2E/x/rank_0/3_0.png"),
    ("/abs/k", "rank_0", "%/abs/k/rank_0/3_0.png"),
    ("a/./b", "rank_0", "a/%2E/b/rank_0/3_0.png"),
    ("a//b/", "rank_0", "a/%/b/%/rank_0/3_0.png"),
    ("..", "..", "%2E%2E/%2E%2E/3_0.png"),
    ("k", "../../w", "k/..%2F..%2Fw/3_0.png"),
    ("k", "/", "k/%2F/3_0.png"),
    ("k", "", "k/%/3_0.png"),
    ("100%/%2E", ".", "100%25/%252E/%2E/3_0.png"),
])
def test_download_stays_under_its_root_whatever_the_key_or_writer(tmp_path, key, writer, want):
    """Metric keys may hold '..' segments or start with '/': each segment of the key, and the
    writer label, becomes a file name that cannot leave the download root."""
    root = tmp_path / "deep" / "out"
    row = _row(key, writer)
    assert row.filename == want
    path = row.download(str(root))
    assert _inside(root, path), path
    assert path == os.path.join(str(root), *want.split("/"))
    assert open(path, "rb").read() == b"png bytes"
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and not _inside(root, p)]
    assert outside == []


def test_distinct_keys_and_writers_get_distinct_file_names():
    keys = ["a/b", "a//b", "a/./b", "a/../b", "a/%2E/b", "a/%/b", "a/%25/b", "/a/b", "a/b/",
            "%2E%2E/b", "../b"]
    writers = ["w", "", ".", "..", "%", "%2E", "a/b", "a%2Fb", "/"]
    names = [_row(k, w).filename for k in keys for w in writers]
    assert len(set(names)) == len(names)
