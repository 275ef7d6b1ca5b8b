"""cohort.Artifact without a server: building a version, the checks made at the call, and the
hash cache keyed by (device, inode, size, mtime). The upload itself is
tests/distributed/test_artifact_upload.py (a real server and agent)."""
import hashlib
import json
import os
import threading
import time

import pytest

import sdk_helpers  # noqa: F401  (puts the package on the path)
import cohort
from cohort import artifacts


def test_building_a_version(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"weights")
    d = tmp_path / "tok"
    (d / "sub").mkdir(parents=True)
    (d / "vocab.txt").write_text("a b")
    (d / "sub" / "merges.txt").write_text("ab")
    art = cohort.Artifact("mnist-cnn", "model", description="epoch 3", metadata={"epoch": 3})
    art.add_file(str(tmp_path / "model.pt"))
    art.add_file(str(tmp_path / "model.pt"), name="copies/model.pt", policy="immutable")
    art.add_dir(str(d), name="tokenizer")
    art.add_reference("s3://bucket/train.csv", digest="etag1", size=12)
    with art.new_file("config.yaml") as f:
        f.write("lr: 0.1\n")
    assert sorted(art.manifest) == ["config.yaml", "copies/model.pt", "model.pt",
                                    "tokenizer/sub/merges.txt", "tokenizer/vocab.txt",
                                    "train.csv"]
    assert art.manifest["train.csv"] == {"ref": "s3://bucket/train.csv", "digest": "etag1",
                                         "size": 12}
    assert art.manifest["model.pt"] == {"sha256": None, "size": None}  # hashed when logged


@pytest.mark.parametrize("name", ["", ".x", "a/b", "a b", "x" * 129, "é"])
def test_bad_names_are_value_errors_at_the_call(name):
    with pytest.raises(ValueError):
        cohort.Artifact(name, "model")
    with pytest.raises(ValueError):
        cohort.Artifact("ok", name)


def test_bad_additions_are_value_errors_at_the_call(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    art = cohort.Artifact("ok", "model")
    for bad in ["../x", "/abs", "a//b", "a\\b", "a/./b", "tab\there"]:
        with pytest.raises(ValueError):
            art.add_file(str(f), name=bad)
    with pytest.raises(ValueError, match="not a file"):
        art.add_file(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="policy"):
        art.add_file(str(f), policy="sometimes")
    with pytest.raises(ValueError, match="only file://"):
        art.add_reference("ftp://host/x")
    art.add_file(str(f), name="f")
    with pytest.raises(ValueError, match="twice"):
        art.add_file(str(f), name="f")
    with pytest.raises(ValueError, match="JSON"):
        cohort.Artifact("ok", "model", metadata={"x": object()})
    for alias in ["latest2x", "best", "v1.0"]:
        assert artifacts.check_alias(alias) == alias
    for alias in ["v3", "versions", "aliases", "latest", "a b"]:
        with pytest.raises(ValueError):
            artifacts.check_alias(alias)


def test_log_artifact_on_a_disabled_run_is_refused(tmp_path):
    run = cohort.init(mode="disabled")
    with pytest.raises(ValueError, match="disabled"):
        run.log_artifact(cohort.Artifact("a", "model").add_reference("s3://b/k"))
    run.finish()


def test_hash_cache_keys_by_device_inode_size_and_mtime(tmp_path):
    cache = artifacts.HashCache(str(tmp_path / "cache.sqlite"))
    f = tmp_path / "ckpt"
    f.write_bytes(b"a" * 1000)
    st = os.stat(f)
    assert cache.lookup(st) is None
    digest = hashlib.sha256(b"a" * 1000).hexdigest()
    cache.store(st, digest)
    assert cache.lookup(os.stat(f)) == digest
    f.write_bytes(b"b" * 1001)  # another size (and mtime): not the cached file any more
    assert cache.lookup(os.stat(f)) is None
    assert not cache.held("http://s", "alice", digest)
    cache.note_held("http://s", "alice", [digest])
    assert cache.held("http://s", "alice", digest)
    assert not cache.held("http://s", "bob", digest)


def test_hash_cache_records_only_files_unchanged_and_older_than_a_second(tmp_path):
    cache = artifacts.HashCache(str(tmp_path / "cache" / "held.sqlite"))
    old, fresh = tmp_path / "old.bin", tmp_path / "fresh.bin"
    old.write_bytes(b"o" * 5000)
    fresh.write_bytes(b"f" * 10)
    then = time.time() - 60
    os.utime(old, (then, then))
    assert cache.hash_file(str(old)) == {"sha256": hashlib.sha256(b"o" * 5000).hexdigest(),
                                         "size": 5000}
    assert cache.hash_file(str(fresh))["sha256"] == hashlib.sha256(b"f" * 10).hexdigest()
    assert cache.lookup(os.stat(fresh)) is None  # just written: a same-tick write is invisible
    # The entry is the shared format (docs/formats.md, "Hash cache"): one file per identity.
    st = os.stat(old)
    entry = tmp_path / "cache" / "hashes" / "v1" / f"{st.st_dev}-{st.st_ino}-5000-{st.st_mtime_ns}"
    digest = hashlib.sha256(b"o" * 5000).hexdigest()
    check = hashlib.sha256(f"{entry.name} {digest}".encode()).hexdigest()[:16]
    assert entry.read_text() == f"{digest} {check}\n"
    # Answered without reading: bytes changed in place, same size and time, same answer.
    with open(old, "r+b") as f:
        f.write(b"x" * 5000)
    os.utime(old, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache.hash_file(str(old))["sha256"] == digest
    # A copy is made from the bytes, whatever the cache says.
    d = cache.hash_file(str(old), str(tmp_path / "copy"))
    assert d["sha256"] == hashlib.sha256(b"x" * 5000).hexdigest()
    assert (tmp_path / "copy").read_bytes() == b"x" * 5000
    entry.write_text(f"{'0' * 64} {check}\n")  # damaged: a miss
    assert cache.lookup(os.stat(old)) is None


def test_the_racy_window_is_the_cpp_one_and_a_failed_version_forgets_its_entries(tmp_path,
                                                                                  monkeypatch):
    import pathlib
    import re
    header = pathlib.Path(__file__).resolve().parents[2] / "src" / "agent" / "hash_cache.h"
    m = re.search(r"kRacyNanos = ([0-9']+);", header.read_text())
    assert m and int(m.group(1).replace("'", "")) == artifacts._RACY_NS
    cache = artifacts.HashCache(str(tmp_path / "cache" / "held.sqlite"))
    monkeypatch.setattr(artifacts, "_cache", cache)
    f = tmp_path / "w.bin"
    f.write_bytes(b"w" * 10)
    st = os.stat(f)
    cache.store(st, hashlib.sha256(b"other").hexdigest())
    art = cohort.Artifact("a", "model").add_file(str(f))
    art._note_state({"state": "failed", "error": "blob x: the uploaded bytes (10 bytes, SHA-256 y) "
                     "are not the blob announced (10 bytes, SHA-256 x); upload the file again"})
    assert cache.lookup(st) is None  # the next log_artifact reads the file


def test_hash_file_copies_in_the_same_pass(tmp_path):
    src = tmp_path / "src"
    data = os.urandom(3 << 20)
    src.write_bytes(data)
    d = artifacts._hash_file(str(src), str(tmp_path / "copy"))
    assert d == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert (tmp_path / "copy").read_bytes() == data


def test_a_failure_of_the_hashing_thread_is_raised_and_never_blocks_the_copy(tmp_path,
                                                                            monkeypatch):
    """The copy is written while a thread hashes (side by side); a hash that fails midway must
    come back as the call's error, not leave the copying side waiting on a full queue."""
    src = tmp_path / "src"
    src.write_bytes(os.urandom(20 << 20))  # 20 chunks: more than the queue holds

    class Failing:
        calls = 0

        def update(self, chunk):
            Failing.calls += 1
            if Failing.calls == 2:
                raise MemoryError("hash failed")

    monkeypatch.setattr(artifacts.hashlib, "sha256", Failing)
    with pytest.raises(MemoryError, match="hash failed"):
        artifacts._hash_file(str(src), str(tmp_path / "copy"))
    assert Failing.calls == 2  # nothing hashed after the failure, the queue read to its end


class _FakeRun:
    """Just what Artifact's background thread uses of a run (no agent)."""

    def __init__(self, staging, fail_with=None):
        self._artifact_staging_dir = str(staging)
        self.entity = "alice"
        self.url = "http://127.0.0.1:1/alice/p/runs/r"
        self.fail_with = fail_with
        self.intents = []

    def _log_artifact_intent(self, text):
        if self.fail_with:
            raise self.fail_with
        self.intents.append(text)
        return "id"


def test_the_background_thread_hashes_stages_and_hands_over_one_intent(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "_cache", artifacts.HashCache(str(tmp_path / "c.sqlite")))
    data = os.urandom(1 << 20)
    (tmp_path / "m.bin").write_bytes(data)
    (tmp_path / "i.bin").write_bytes(b"immutable")
    run = _FakeRun(tmp_path / "staging")
    art = cohort.Artifact("a", "model").add_file(str(tmp_path / "m.bin"))
    art.add_file(str(tmp_path / "i.bin"), policy="immutable")
    art.add_reference((tmp_path / "i.bin").as_uri(), name="ref.bin")
    artifacts.log_artifact(run, art, aliases=["best", "latest"])
    assert art._join(30) and art._error is None, art._error
    intent = json.loads(run.intents[0])
    assert intent["aliases"] == ["best"]  # latest moves by itself
    files = {f["path"]: f for f in intent["files"]}
    assert files["m.bin"]["sha256"] == hashlib.sha256(data).hexdigest()
    staged = files["m.bin"]["source"]
    assert staged.startswith(str(tmp_path / "staging" / intent["id"]))
    assert open(staged, "rb").read() == data  # the copy made while hashing
    assert files["i.bin"]["source"] == str(tmp_path / "i.bin")  # immutable: in place
    assert files["ref.bin"] == {"path": "ref.bin", "ref": (tmp_path / "i.bin").as_uri(),
                                "digest": hashlib.sha256(b"immutable").hexdigest(), "size": 9}
    assert art.manifest["m.bin"]["sha256"] == files["m.bin"]["sha256"]


def test_a_failed_hand_over_removes_the_staged_copies_and_wait_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "_cache", artifacts.HashCache(str(tmp_path / "c.sqlite")))
    (tmp_path / "m.bin").write_bytes(b"x" * 100)
    run = _FakeRun(tmp_path / "staging", fail_with=cohort.UsageError("boom"))
    art = cohort.Artifact("a", "model").add_file(str(tmp_path / "m.bin"))
    artifacts.log_artifact(run, art)
    with pytest.raises(cohort.ArtifactError, match="boom"):
        art.wait(timeout=30)
    assert not (tmp_path / "staging" / art._id).exists()


def _lock_is_held(path):
    import fcntl
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing unlocks what this descriptor took
    return False


def test_claims_share_one_lock_file_per_process_and_a_forked_child_takes_its_own(tmp_path):
    """docs/formats.md "Staging": each claimed directory's .lock is a hard link of the process's
    one lock file (one descriptor, however many directories); a forked child lets go of its copy
    of the parent's lock without unlocking it, and claims with a lock file of its own."""
    root = tmp_path / "staging"
    a, b, c = root / "a", root / "b", root / "c"
    for d in (a, b, c):
        d.mkdir(parents=True)
    artifacts._write_owner(str(a))
    artifacts._write_owner(str(b))
    mine = [p for p in (root / ".clients").iterdir() if p.name.split(".")[1] == str(os.getpid())]
    assert len(mine) == 1, list((root / ".clients").iterdir())
    assert mine[0].stat().st_nlink == 3
    assert os.path.samefile(a / ".lock", mine[0]) and os.path.samefile(b / ".lock", mine[0])
    assert (a / ".owner").read_text().split()[0] == str(os.getpid())
    assert int((a / ".lock").read_text()) == os.stat("/proc/self/ns/pid").st_ino
    assert _lock_is_held(a / ".lock")

    pid = os.fork()
    if pid == 0:  # the child: claims c with its own lock file, then exits
        code = 1
        try:
            artifacts._write_owner(str(c))
            code = 0 if not os.path.samefile(c / ".lock", mine[0]) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert (c / ".owner").read_text().split()[0] == str(pid)
    assert _lock_is_held(a / ".lock"), "the child's exit unlocked the parent's lock"
    assert not _lock_is_held(c / ".lock"), "the child's lock outlived it"


def test_add_dir_follows_symlinked_directories_and_stops_at_loops(tmp_path):
    """As the CLI's CollectDir: a symbolic link to a directory is walked (its files are in the
    version under the link's name); a link back to a directory it is inside of (a loop) is
    left out instead of walked forever."""
    outside = tmp_path / "shared"
    (outside / "deep").mkdir(parents=True)
    (outside / "vocab.txt").write_text("a b")
    (outside / "deep" / "merges.txt").write_text("ab")
    d = tmp_path / "tok"
    (d / "sub").mkdir(parents=True)
    (d / "top.txt").write_text("t")
    (d / "shared").symlink_to(outside, target_is_directory=True)
    (d / "sub" / "again").symlink_to(d, target_is_directory=True)  # a loop
    (outside / "back").symlink_to(outside, target_is_directory=True)  # a loop through the link
    art = cohort.Artifact("tok", "model").add_dir(str(d), name="tokenizer")
    assert sorted(art.manifest) == ["tokenizer/shared/deep/merges.txt",
                                    "tokenizer/shared/vocab.txt", "tokenizer/top.txt"]
    assert art._entries["tokenizer/shared/vocab.txt"]["source"] == str(d / "shared" /
                                                                      "vocab.txt")


def test_add_dir_refuses_a_directory_it_cannot_list(tmp_path, monkeypatch):
    """A subdirectory that cannot be listed raises, naming it, instead of leaving its files
    out of the version without a word."""
    d = tmp_path / "data"
    (d / "locked").mkdir(parents=True)
    (d / "locked" / "x.bin").write_bytes(b"x")
    (d / "a.bin").write_bytes(b"a")
    if os.geteuid() != 0:  # as root, permissions do not apply: listing fails below instead
        os.chmod(d / "locked", 0)
        try:
            with pytest.raises(ValueError, match="cannot list.*locked"):
                cohort.Artifact("data", "dataset").add_dir(str(d))
        finally:
            os.chmod(d / "locked", 0o700)
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(d / "locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)  # what os.walk lists each directory with
    with pytest.raises(ValueError, match=r"cannot list the directory .*locked.*Permission"):
        cohort.Artifact("data", "dataset").add_dir(str(d))


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def test_claims_on_a_file_system_without_hard_links_leak_no_descriptor_or_lock_file(
        tmp_path, monkeypatch):
    """docs/formats.md "Staging": where the lock file cannot be hard-linked (EPERM: no hard
    links on that file system) the directories are left unclaimed; no new lock file (and held
    descriptor) is made for each of them, only when the one known is really gone."""
    import errno
    root = tmp_path / "staging"
    clients = root / ".clients"
    tries = []

    def no_links(src, dst, *args, **kwargs):
        tries.append(dst)
        raise OSError(errno.EPERM, "Operation not permitted", src)

    monkeypatch.setattr(os, "link", no_links)
    (root / "d0").mkdir(parents=True)
    artifacts._write_owner(str(root / "d0"))
    fds, files = _open_fds(), sorted(clients.iterdir())
    assert len(files) == 1 and len(tries) == 1
    for i in range(1, 50):
        d = root / f"d{i}"
        d.mkdir()
        artifacts._write_owner(str(d))
        assert not (d / ".owner").exists() and not (d / ".lock").exists()
    assert _open_fds() == fds
    assert sorted(clients.iterdir()) == files
    assert len(tries) == 1  # the root is known to refuse links: not tried again
    assert not (root / "d0" / ".owner").exists()


def test_a_claim_makes_a_new_lock_file_only_when_the_one_known_is_gone(tmp_path, monkeypatch):
    import errno
    root = tmp_path / "staging"
    clients = root / ".clients"
    for i in range(4):
        (root / f"d{i}").mkdir(parents=True)
    artifacts._write_owner(str(root / "d0"))
    first = sorted(clients.iterdir())
    assert len(first) == 1 and (root / "d0" / ".owner").exists()
    fds = _open_fds()
    # A refusal that is not about the lock file (here: the directory went meanwhile): no new
    # lock file, the root not given up on.
    real = os.link

    def gone_dir(src, dst, *args, **kwargs):
        raise OSError(errno.ENOENT, "No such file or directory", dst)

    monkeypatch.setattr(os, "link", gone_dir)
    for _ in range(10):
        artifacts._write_owner(str(root / "d1"))
    assert sorted(clients.iterdir()) == first and _open_fds() == fds
    monkeypatch.setattr(os, "link", real)
    artifacts._write_owner(str(root / "d2"))
    assert os.path.samefile(root / "d2" / ".lock", first[0])
    # The lock file gone (the agent removed it, the root made again): a new one, linked.
    os.unlink(first[0])
    artifacts._write_owner(str(root / "d3"))
    now = sorted(clients.iterdir())
    assert len(now) == 1 and now != first and os.path.samefile(root / "d3" / ".lock", now[0])
    assert (root / "d3" / ".owner").exists()
    assert _lock_is_held(root / "d2" / ".lock")  # the old descriptor is still held


def test_logging_an_artifact_again_under_another_name_changes_nothing(tmp_path, monkeypatch):
    """log_artifact(art, name=..., type=...) on an artifact already logged (here: still hashing)
    raises before it changes the artifact: the first version commits under its own name."""
    import threading
    monkeypatch.setattr(artifacts, "_cache", artifacts.HashCache(str(tmp_path / "c.sqlite")))
    (tmp_path / "m.bin").write_bytes(b"x" * 100)
    run = _FakeRun(tmp_path / "staging")
    release = threading.Event()
    hand_over = run._log_artifact_intent

    def slow_hand_over(text):
        assert release.wait(30)
        return hand_over(text)

    run._log_artifact_intent = slow_hand_over
    art = cohort.Artifact("a", "model").add_file(str(tmp_path / "m.bin"))
    artifacts.log_artifact(run, art)
    try:
        with pytest.raises(ValueError, match="already logged"):
            artifacts.log_artifact(run, art, name="other", type="dataset")
        with pytest.raises(ValueError, match="already logged"):
            artifacts.log_artifact(run, art, type="dataset")
        assert (art.name, art.type) == ("a", "model")
    finally:
        release.set()
    assert art._join(30) and art._error is None, art._error
    intent = json.loads(run.intents[0])
    assert (intent["name"], intent["type"]) == ("a", "model") and len(run.intents) == 1
    # Nothing added, or a bad type: refused, the name left as it was.
    empty = cohort.Artifact("e", "model")
    with pytest.raises(ValueError, match="no files"):
        artifacts.log_artifact(run, empty, name="renamed")
    f = cohort.Artifact("f", "model").add_file(str(tmp_path / "m.bin"))
    with pytest.raises(ValueError, match="artifact type"):
        artifacts.log_artifact(run, f, name="renamed", type="bad type")
    assert empty.name == "e" and (f.name, f.type) == ("f", "model")


def test_an_artifact_never_logged_takes_its_new_files_directory_with_it():
    """new_file writes into a temporary directory that a logged artifact removes once hashed; one
    never logged removed nothing (a directory left per artifact made and dropped)."""
    import gc
    art = cohort.Artifact("scratch", "dataset")
    with art.new_file("a/b.txt") as f:
        f.write("x")
    tmp = art._tmp_dir
    assert tmp and os.path.isdir(tmp)
    del art, f
    gc.collect()
    assert not os.path.exists(tmp)


def test_the_copy_at_the_call_is_bounded_in_files_too_and_a_removed_file_is_named(tmp_path,
                                                                                   monkeypatch):
    # A dataset of many small files was copied file by file on the training thread (every one
    # under the byte bound); a large file removed after the call failed with a bare
    # FileNotFoundError.
    monkeypatch.setattr(artifacts, "_cache", artifacts.HashCache(str(tmp_path / "c.sqlite")))
    monkeypatch.setattr(artifacts, "_SYNC_COPY_BYTES", 1 << 10)
    src = tmp_path / "data"
    src.mkdir()
    for i in range(artifacts._SYNC_COPY_FILES + 10):
        (src / f"f{i:03}.txt").write_bytes(b"x")
    (tmp_path / "big.bin").write_bytes(b"y" * 4096)  # over the (lowered) byte bound
    run = _FakeRun(tmp_path / "staging")
    art = cohort.Artifact("ds", "dataset").add_dir(str(src))
    art.add_file(str(tmp_path / "big.bin"))
    gate = threading.Event()
    real_prepare = art._prepare
    monkeypatch.setattr(art, "_prepare", lambda: (gate.wait(30), real_prepare()))
    artifacts.log_artifact(run, art)
    staged = [e for e in art._entries.values() if e.get("staged")]
    assert len(staged) == artifacts._SYNC_COPY_FILES
    assert all("identity" in e for e in art._entries.values())
    os.unlink(tmp_path / "big.bin")  # removed before the background copy
    gate.set()
    with pytest.raises(cohort.ArtifactError, match="big.bin was rewritten after log_artifact"):
        art.wait(timeout=30)


def test_ctrl_c_during_the_copy_at_the_call_reaches_the_caller(tmp_path, monkeypatch):
    # A KeyboardInterrupt in the copy made at the call was kept as the version's error and
    # training went on.
    monkeypatch.setattr(artifacts, "_cache", artifacts.HashCache(str(tmp_path / "c.sqlite")))
    (tmp_path / "m.bin").write_bytes(b"x" * 100)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(artifacts.shutil, "copyfileobj", interrupted)
    art = cohort.Artifact("a", "model").add_file(str(tmp_path / "m.bin"))
    with pytest.raises(KeyboardInterrupt):
        artifacts.log_artifact(_FakeRun(tmp_path / "staging"), art)
    with pytest.raises((cohort.ArtifactError, KeyboardInterrupt)):
        art.wait(timeout=30)
