"""The Python read side of artifacts against a real `cohort server` (docs/python-api.md,
"Artifacts"): run.use_artifact (lineage), download (ranged, parallel, verified, cached,
resumable), get_path, and cohort.Api's artifact readers. Versions are logged straight through
the HTTP API (art_helpers), so that these tests need no upload side."""
import json
import os
import re
import urllib.request

import pytest

import art_helpers
from art_helpers import PART, log_version, pattern, sha, stored_blob
from conftest import ServerProcess

import cohort  # noqa: E402  (art_helpers put the source tree first)
import dist_helpers  # noqa: E402

PROJECT = "arts"


@pytest.fixture
def srv(tmp_path):
    s = ServerProcess(tmp_path / "home").start()
    yield s
    s.stop()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("COHORT_CACHE_DIR", str(d))
    return d


@pytest.fixture(params=["copied from the cache", "one pass"])
def copies(request, monkeypatch):
    """Both ways a large blob reaches the download directory: fetched into the cache, then copied
    out of it (blobs under dl.LARGE_COPY_BYTES, 64 MiB), or written into both in one pass
    (FileWriter's copy_to; the threshold lowered to one range here, so that BIG goes that way).
    The calls of dl.place (the copy out of the cache) are recorded."""
    from cohort import artifact_download as dl
    if request.param == "one pass":
        monkeypatch.setattr(dl, "LARGE_COPY_BYTES", PART)
    calls = []
    real = dl.place

    def recorded(source, dest, *args, **kwargs):
        calls.append(os.path.basename(dest))
        return real(source, dest, *args, **kwargs)

    monkeypatch.setattr(dl, "place", recorded)
    return request.param, calls


@pytest.fixture
def entity(srv):
    status, me = srv.api().get("/api/v1/viewer")
    assert status == 200, me
    return me["entity"]


@pytest.fixture
def capi(srv):
    a = cohort.Api(base_url=srv.url, api_key=srv.config["api_key"])
    yield a
    a.close()


def tree(root):
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            full = os.path.join(dirpath, n)
            out[os.path.relpath(full, root)] = open(full, "rb").read()
    return out


BIG = pattern(2 * PART + 12345, "big")  # three ranges, the last one short
FILES = {"model.bin": BIG, "config.json": b'{"layers": 3}', "data/train.csv": b"a,b\n1,2\n",
         "data/empty.txt": b""}


def test_download_fetches_every_file_verified_and_in_parallel(srv, entity, capi, cache,
                                                              tmp_path, copies):
    files = dict(FILES, **{f"shards/{i:02d}.bin": pattern(1000 + i, i) for i in range(20)})
    log_version(srv.api(), entity, PROJECT, "resnet", files, aliases=["best"],
                metadata={"epoch": 3}, description="epoch 3")
    v = capi.artifact(f"{entity}/{PROJECT}/resnet:best")
    assert (v.name, v.type, v.version) == ("resnet", "model", "v0")
    assert set(v.aliases) == {"best", "latest"}
    assert v.metadata == {"epoch": 3} and v.description == "epoch 3"
    assert v.size == sum(len(d) for d in files.values()) and len(v.digest) == 64
    entries = {f.path: f for f in v.files()}
    assert set(entries) == set(files)
    assert entries["model.bin"].sha256 == sha(BIG) and entries["model.bin"].size == len(BIG)
    root = v.download(str(tmp_path / "out"), workers=4)
    assert root == str(tmp_path / "out")
    assert tree(root) == files
    assert v.last_download["fetched_bytes"] == v.size
    # Cached by content hash: the blobs are in the cache, read-only.
    blob = cache / "artifacts" / "sha256" / sha(BIG)[:2] / sha(BIG)
    assert blob.read_bytes() == BIG and blob.stat().st_mode & 0o222 == 0
    assert not list(cache.rglob("*.part"))
    way, copied = copies
    # model.bin was not read back out of the cache in one pass; the small files always are
    assert ("model.bin" in " ".join(copied)) == (way == "copied from the cache"), copied
    assert os.stat(root + "/model.bin").st_ino != blob.stat().st_ino  # a copy, not a link


def test_a_download_the_busy_server_refuses_is_asked_again(tmp_path, cache):
    # One download budget of 1 MiB held by a client that stopped reading: the SDK's download is
    # answered 503 (after the server's 5 s wait), pauses and asks again once the budget is free.
    import socket
    import threading
    srv = ServerProcess(tmp_path / "home", ["--max-response-bytes-in-flight", "1048576"]).start()
    try:
        entity = srv.api().get("/api/v1/viewer")[1]["entity"]
        log_version(srv.api(), entity, PROJECT, "big", {"model.bin": BIG})
        capi = cohort.Api(base_url=srv.url, api_key=srv.config["api_key"])
        v = capi.artifact(f"{entity}/{PROJECT}/big:latest")
        url = v._file_url(v.files()[0])  # the path the SDK's download asks for
        host, port = srv.url.split("//")[1].split(":")
        stalled = socket.create_connection((host, int(port)))
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\n"
                        f"Authorization: Bearer {srv.config['api_key']}\r\n\r\n".encode())
        assert stalled.recv(12).startswith(b"HTTP/1.1 200")  # holding its share, not reading
        threading.Timer(6.0, stalled.close).start()  # after the SDK's first try was refused
        root = v.download(str(tmp_path / "out"))
        assert open(os.path.join(root, "model.bin"), "rb").read() == BIG
        metrics = urllib.request.urlopen(urllib.request.Request(
            srv.url + "/metrics", headers={"Authorization": "Bearer " + srv.config["api_key"]}),
            timeout=10).read().decode()
        assert re.search(r"^cohort_http_responses_refused_total [1-9]", metrics, re.M), metrics
        capi.close()
    finally:
        srv.stop()


def test_second_download_comes_from_the_cache_without_the_server(srv, entity, capi, cache,
                                                                 tmp_path, copies):
    log_version(srv.api(), entity, PROJECT, "ds", FILES, type="dataset")
    v = capi.artifact(f"{PROJECT}/ds")  # the key's entity, the latest version
    assert v.version == "v0" and v.type == "dataset"
    v.download(str(tmp_path / "a"))
    srv.stop()  # no server: every byte must come from the cache
    root = v.download(str(tmp_path / "b"))
    assert tree(root) == FILES
    assert v.last_download["fetched_bytes"] == 0 and v.last_download["files"] == len(FILES)


def test_default_root_is_artifacts_name_version(srv, entity, capi, cache, tmp_path,
                                                monkeypatch):
    log_version(srv.api(), entity, PROJECT, "small", {"a.txt": b"alpha"})
    monkeypatch.chdir(tmp_path)
    root = capi.artifact(f"{entity}/{PROJECT}/small:v0").download()
    assert root == str(tmp_path / "artifacts" / "small:v0")
    assert tree(root) == {"a.txt": b"alpha"}


def test_get_path_downloads_one_file(srv, entity, capi, cache, tmp_path):
    log_version(srv.api(), entity, PROJECT, "resnet", FILES)
    v = capi.artifact(f"{entity}/{PROJECT}/resnet:v0")
    path = v.get_path("data/train.csv", root=str(tmp_path / "one"))
    assert path == str(tmp_path / "one" / "data" / "train.csv")
    assert open(path, "rb").read() == FILES["data/train.csv"]
    assert tree(tmp_path / "one") == {"data/train.csv": FILES["data/train.csv"]}
    with pytest.raises(cohort.UsageError, match="no file 'nope.bin'"):
        v.get_path("nope.bin")


def test_corrupted_server_blob_fails_verification_and_keeps_nothing(srv, entity, capi, cache,
                                                                    tmp_path, copies):
    log_version(srv.api(), entity, PROJECT, "resnet", FILES)
    path = stored_blob(srv, sha(BIG))
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[PART + 7] ^= 0xFF  # one flipped bit in the second range, same size
    path.write_bytes(bytes(data))
    v = capi.artifact(f"{entity}/{PROJECT}/resnet:latest")
    with pytest.raises(cohort.VerificationError) as info:
        v.download(str(tmp_path / "out"))
    message = str(info.value)
    assert "model.bin" in message and sha(BIG) in message and sha(bytes(data)) in message
    assert "not kept" in message
    assert not (tmp_path / "out" / "model.bin").exists()
    assert not [n for n in os.listdir(tmp_path / "out") if "model.bin" in n]  # nor its copy
    blob = cache / "artifacts" / "sha256" / sha(BIG)[:2] / sha(BIG)
    assert not blob.exists() and not blob.with_name(blob.name + ".part").exists()


def test_download_resumes_a_partial_blob(srv, entity, capi, cache, tmp_path, copies):
    log_version(srv.api(), entity, PROJECT, "resnet", {"model.bin": BIG})
    v = capi.artifact(f"{entity}/{PROJECT}/resnet")
    blob = cache / "artifacts" / "sha256" / sha(BIG)[:2] / sha(BIG)
    blob.parent.mkdir(parents=True)
    (blob.parent / (sha(BIG) + ".part")).write_bytes(BIG[:PART + 100])  # an interrupted one
    root = v.download(str(tmp_path / "out"))
    assert tree(root) == {"model.bin": BIG}
    assert v.last_download["fetched_bytes"] == len(BIG) - PART - 100


def test_a_download_cut_midway_keeps_what_came_for_the_next_one_and_places_nothing(
        srv, entity, capi, cache, tmp_path, copies, monkeypatch):
    from cohort import artifact_download as dl
    log_version(srv.api(), entity, PROJECT, "resnet", {"model.bin": BIG})
    v = capi.artifact(f"{entity}/{PROJECT}/resnet")
    real, ranges = dl._fetch_range, []

    def cut_after_the_first_range(*args, **kwargs):
        ranges.append(args[2])
        if len(ranges) > 1:
            raise cohort.CommError("the connection was cut")
        return real(*args, **kwargs)

    monkeypatch.setattr(dl, "_fetch_range", cut_after_the_first_range)
    with pytest.raises(cohort.CommError, match="cut"):
        v.download(str(tmp_path / "out"), progress=False)
    assert ranges == [0, PART]
    assert os.listdir(tmp_path / "out") == []  # neither the file nor a copy of it begun
    blob = cache / "artifacts" / "sha256" / sha(BIG)[:2] / sha(BIG)
    assert (blob.parent / (sha(BIG) + ".part")).read_bytes() == BIG[:PART]  # for the next one
    monkeypatch.setattr(dl, "_fetch_range", real)
    root = v.download(str(tmp_path / "out"), progress=False)
    assert tree(root) == {"model.bin": BIG}
    assert v.last_download["fetched_bytes"] == len(BIG) - PART


def test_a_write_error_midway_is_raised_and_keeps_no_file(srv, entity, capi, cache, tmp_path,
                                                         monkeypatch):
    # A write that failed after writing part of its block (a full disk) was taken for a dropped
    # connection: the range was fetched again and written after those bytes, and the file,
    # longer than the blob, was kept as verified (the hash is of the bytes received).
    import errno
    from cohort import _file_writer
    small = pattern(3 << 20, 7)
    log_version(srv.api(), entity, PROJECT, "small", {"w.bin": small})
    v = capi.artifact(f"{entity}/{PROJECT}/small")
    real, failed = _file_writer.PlainWriter.write, []

    def half_then_enospc(self, data):
        if not failed and len(data) > 1:
            failed.append(len(data))
            real(self, data[: len(data) // 2])
            self._file.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(_file_writer.PlainWriter, "write", half_then_enospc)
    with pytest.raises(OSError, match="No space"):
        v.download(str(tmp_path / "out"), progress=False)
    assert failed
    blob = cache / "artifacts" / "sha256" / sha(small)[:2] / sha(small)
    assert not blob.exists()
    assert not (tmp_path / "out" / "w.bin").exists()
    monkeypatch.setattr(_file_writer.PlainWriter, "write", real)
    root = v.download(str(tmp_path / "out"), progress=False)
    assert tree(root) == {"w.bin": small}


def test_a_bad_partial_blob_is_fetched_again(srv, entity, capi, cache, tmp_path, copies):
    log_version(srv.api(), entity, PROJECT, "resnet", {"model.bin": BIG})
    v = capi.artifact(f"{entity}/{PROJECT}/resnet")
    blob = cache / "artifacts" / "sha256" / sha(BIG)[:2] / sha(BIG)
    blob.parent.mkdir(parents=True)
    (blob.parent / (sha(BIG) + ".part")).write_bytes(b"\0" * 1000)
    root = v.download(str(tmp_path / "out"))
    assert tree(root) == {"model.bin": BIG}
    # The rest of the bad file was fetched before the digest showed it bad, then all of it.
    assert v.last_download["fetched_bytes"] == 2 * len(BIG) - 1000
    assert v.last_download["bytes"] == len(BIG)


def test_api_lists_collections_and_versions(srv, entity, capi, cache):
    api = srv.api()
    log_version(api, entity, PROJECT, "resnet", {"m": b"1"})
    log_version(api, entity, PROJECT, "resnet", {"m": b"2"}, aliases=["best"])
    log_version(api, entity, PROJECT, "resnet", {"m": b"3"})
    log_version(api, entity, PROJECT, "mnist", {"d": b"x"}, type="dataset")
    cols = {c.name: c for c in capi.artifact_collections(f"{entity}/{PROJECT}")}
    assert set(cols) == {"resnet", "mnist"}
    assert cols["resnet"].type == "model" and cols["mnist"].type == "dataset"
    versions = capi.artifact_versions("resnet", project=f"{entity}/{PROJECT}")
    assert sorted(v.version for v in versions) == ["v0", "v1", "v2"]
    by = {v.version: v for v in versions}
    assert "best" in by["v1"].aliases and "latest" in by["v2"].aliases
    assert {f.path for f in by["v1"].files()} == {"m"}  # read on demand when not listed
    assert [v.version for v in capi.artifact_versions(f"{PROJECT}/resnet")] == \
        [v.version for v in versions]
    assert capi.artifact(f"{entity}/{PROJECT}/resnet").version == "v2"
    assert capi.artifact(f"{entity}/{PROJECT}/resnet:best").version == "v1"
    with pytest.raises(cohort.UsageError, match="type 'model', not 'dataset'"):
        capi.artifact(f"{entity}/{PROJECT}/resnet:v0", type="dataset")
    with pytest.raises(cohort.NotFound):
        capi.artifact(f"{entity}/{PROJECT}/resnet:v9")
    with pytest.raises(cohort.UsageError, match="name"):
        capi.artifact(f"{entity}/{PROJECT}/bad name")


USE = '''
import json, os, cohort
run = cohort.init(project="{project}", id="consumer1",
                  settings=cohort.Settings(mode="shared", x_label="rank_1", x_primary=False,
                                           x_update_finish_state=False,
                                           x_stats_sampling_interval=0))
v = run.use_artifact("resnet:best")
root = v.download(os.environ["OUT_DIR"])
path = run.use_artifact("{entity}/{project}/resnet:v0", type="model").get_path("config.json")
print(json.dumps({{"version": v.version, "aliases": v.aliases, "root": root,
                   "files": sorted(f.path for f in v.files()), "path": path,
                   "label": run.label, "id": run.id}}))
try:
    cohort.use_artifact("resnet:v0", type="dataset")  # the current run's
except cohort.UsageError as e:
    print("TYPE-ERROR", e)
run.finish()
'''


def test_use_artifact_records_lineage_with_the_writer_label(srv, entity, tmp_path):
    api = srv.api()
    log_version(api, entity, PROJECT, "resnet", FILES, aliases=["best"])
    client = dist_helpers.Client(srv, tmp_path / "work")
    client.tmp.mkdir(parents=True)
    try:
        out = client.python(USE.format(project=PROJECT, entity=entity),
                            env={"OUT_DIR": str(tmp_path / "out"),
                                 "COHORT_CACHE_DIR": str(tmp_path / "cache")})
    finally:
        client.stop_agents()
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    got = json.loads(lines[0])
    assert got["version"] == "v0" and "best" in got["aliases"]
    assert got["files"] == sorted(FILES) and tree(got["root"]) == FILES
    assert open(got["path"], "rb").read() == FILES["config.json"]
    assert got["path"].endswith(os.path.join("artifacts", "resnet:v0", "config.json"))
    assert lines[1].startswith("TYPE-ERROR") and "'dataset'" in lines[1]
    status, version = api.get(f"/api/v1/artifacts/{entity}/{PROJECT}/resnet/v0")
    assert status == 200, version
    used = {(u["run"], u["writer"]) for u in version["used_by"]}
    assert used == {("consumer1", "rank_1")}
    status, arts = api.get(f"/api/v1/runs/{entity}/{PROJECT}/consumer1/artifacts")
    assert status == 200, arts
    assert {(a["name"], a["version"], a["direction"]) for a in arts["artifacts"]} == \
        {("resnet", "v0", "input")}
    capi = cohort.Api(base_url=srv.url, api_key=srv.config["api_key"])
    used = capi.run(f"{entity}/{PROJECT}/consumer1").used_artifacts()
    assert [(u.name, u.version) for u in used] == [("resnet", "v0")]
    assert {f.path for f in used[0].files()} == set(FILES)
    assert capi.run(f"{entity}/{PROJECT}/consumer1").logged_artifacts() == []
    capi.close()


def test_a_disabled_run_reads_the_version_without_recording_the_use(srv, entity, cache,
                                                                    tmp_path):
    log_version(srv.api(), entity, PROJECT, "resnet", {"m.bin": b"weights"})
    assert os.environ.get("COHORT_MODE") == "disabled"  # sdk_helpers: no agent in-process
    run = cohort.init(project=PROJECT, settings=cohort.Settings(
        base_url=srv.url, api_key=srv.config["api_key"]))
    try:
        with pytest.warns(RuntimeWarning, match="is not recorded"):
            v = run.use_artifact("resnet:latest")
        assert v.version == "v0"
        assert open(v.get_path("m.bin", root=str(tmp_path / "o")), "rb").read() == b"weights"
    finally:
        run.finish()
    status, version = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/resnet/v0")
    assert status == 200 and version["used_by"] == []
    with pytest.raises(cohort.UsageError, match="no run"):
        cohort.use_artifact("resnet")


def test_references_file_ones_are_copied_and_checked_others_left_out(srv, entity, capi, cache,
                                                                     tmp_path):
    local = tmp_path / "shared" / "train.csv"
    local.parent.mkdir()
    local.write_bytes(b"x,y\n1,2\n")
    refs = [{"path": "data/train.csv", "ref": local.as_uri(), "digest": sha(local.read_bytes()),
             "size": local.stat().st_size},
            {"path": "data/remote.csv", "ref": "s3://bucket/remote.csv", "digest": "etag-1",
             "size": 99}]
    log_version(srv.api(), entity, PROJECT, "ds", {"readme.md": b"# data"}, type="dataset",
                refs=refs)
    v = capi.artifact(f"{PROJECT}/ds")
    by = {f.path: f for f in v.files()}
    assert by["data/remote.csv"].ref == "s3://bucket/remote.csv" and by["data/remote.csv"].digest \
        == "etag-1" and not by["data/remote.csv"].sha256
    root = v.download(str(tmp_path / "out"))
    assert tree(root) == {"readme.md": b"# data", "data/train.csv": b"x,y\n1,2\n"}
    with pytest.raises(cohort.UsageError, match="s3://bucket/remote.csv"):
        v.get_path("data/remote.csv")
    local.write_bytes(b"x,y\n9,9\n")  # same size, other bytes: the reference changed
    with pytest.raises(cohort.VerificationError, match="changed"):
        v.get_path("data/train.csv", root=str(tmp_path / "again"))
    assert not (tmp_path / "again" / "data" / "train.csv").exists()
