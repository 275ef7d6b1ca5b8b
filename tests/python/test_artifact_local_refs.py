"""The download of ``file://`` references without a server (docs/python-api.md, "Artifacts"):
the file is checked against the manifest's size and SHA-256 in the same read that copies it,
so a file rewritten meanwhile never lands unverified."""
import builtins
import hashlib
import os
import threading

import pytest

import sdk_helpers  # noqa: F401  (puts the package on the path)
import cohort
from cohort import api_artifacts
from cohort import artifact_download as dl

OLD, NEW = b"x,y\n1,2\n", b"x,y\n9,9\n"  # same size, other bytes


def _download(source, target, digest, size=len(OLD)):
    entry = api_artifacts.ArtifactFile(path="data/train.csv", size=size, sha256="",
                                       ref=source.as_uri(), digest=digest)
    bar = dl.Progress("ds:v0", size, 1, False)
    api_artifacts._local_ref_task("ds:v0", entry, str(target), bar)(None, threading.Event())
    return bar


def _leftovers(d):
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_a_reference_rewritten_after_it_was_first_read_never_lands_unverified(tmp_path,
                                                                             monkeypatch):
    """A writer rewrites the file the moment its first reader closes it (between a hash pass
    and a copy pass, were there two): what lands is the manifest's bytes, or nothing and a
    VerificationError."""
    source = tmp_path / "shared" / "train.csv"
    source.parent.mkdir()
    source.write_bytes(OLD)
    target = tmp_path / "out" / "data" / "train.csv"
    real_open = builtins.open
    rewritten = []

    class Reader:
        def __init__(self, f):
            self._f = f

        def __getattr__(self, name):
            return getattr(self._f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

        def close(self):
            self._f.close()
            if not rewritten:
                rewritten.append(True)
                with real_open(source, "wb") as f:
                    f.write(NEW)

    def racing_open(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        if os.fspath(file) == str(source) and "r" in mode:
            return Reader(f)
        return f

    monkeypatch.setattr(builtins, "open", racing_open)
    digest = hashlib.sha256(OLD).hexdigest()
    try:
        _download(source, target, digest)
    except cohort.VerificationError:
        assert not target.exists() and _leftovers(target.parent) == []
    else:
        assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    assert rewritten


def test_a_reference_that_no_longer_matches_raises_and_leaves_nothing(tmp_path):
    source = tmp_path / "shared" / "train.csv"
    source.parent.mkdir()
    source.write_bytes(OLD)
    target = tmp_path / "out" / "data" / "train.csv"
    bar = _download(source, target, hashlib.sha256(OLD).hexdigest())
    assert target.read_bytes() == OLD and (bar.done_bytes, bar.done_files) == (len(OLD), 1)
    source.write_bytes(NEW)
    again = tmp_path / "again" / "data" / "train.csv"
    with pytest.raises(cohort.VerificationError, match="changed"):
        _download(source, again, hashlib.sha256(OLD).hexdigest())
    assert _leftovers(again.parent) == []
    # Over a copy already there: the copy stays as it was.
    with pytest.raises(cohort.VerificationError, match="changed"):
        _download(source, target, hashlib.sha256(OLD).hexdigest())
    assert target.read_bytes() == OLD and _leftovers(target.parent) == ["train.csv"]
    with pytest.raises(cohort.VerificationError, match="bytes"):
        _download(source, again, hashlib.sha256(OLD).hexdigest(), size=len(OLD) + 1)
    with pytest.raises(cohort.UsageError, match="cannot read"):
        _download(tmp_path / "missing.csv", again, hashlib.sha256(OLD).hexdigest())
    assert _leftovers(again.parent) == []
    # Not a SHA-256 (an ETag, say): copied, checked by its size.
    _download(source, again, "etag-1")
    assert again.read_bytes() == NEW
