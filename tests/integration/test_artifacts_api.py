"""Artifacts and the blob store through the real `cohort server` over a real socket
(docs/artifacts.md): resumable part uploads checked before publication, versions deduplicated
by digest, aliases, lineage, ranged downloads, bad input refused with nothing half-committed,
and another entity seeing nothing."""
import hashlib
import os
import signal
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from conftest import SANITIZER, ServerProcess
from test_api import entity, join, make_run
from test_isolation import create_key

PART = 8 << 20


def raw(api, method, path, data=None, headers=None):
    """(status, headers, body bytes) of a request with the API key."""
    req = urllib.request.Request(api.url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + api.key)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def blob_path(api, sha):
    return f"/api/v1/blobs/{entity(api)}/{sha}"


def upload(api, data, parts=None):
    """Uploads `data` part by part (all parts, or those listed) and completes it."""
    sha = hashlib.sha256(data).hexdigest()
    count = (len(data) + PART - 1) // PART
    for n in (range(count) if parts is None else parts):
        status, _, body = raw(api, "PUT", f"{blob_path(api, sha)}/parts/{n}?size={len(data)}",
                              data[n * PART:(n + 1) * PART])
        assert status == 200, body
    if parts is None:
        status, done = api.post(f"{blob_path(api, sha)}/complete", {"size": len(data)})
        assert status == 200, done
        assert done["stored"] is True
    return sha


def arts(api):
    return f"/api/v1/artifacts/{entity(api)}/proj"


def commit(api, name, files, **fields):
    return api.post(f"{arts(api)}/{name}", dict(type=fields.pop("type", "model"), files=files,
                                                **fields))


def test_parts_in_any_order_are_checked_then_committed_and_served_in_ranges(server, api):
    data = os.urandom(2 * PART + 12345)
    sha = hashlib.sha256(data).hexdigest()
    status, st = api.get(f"{blob_path(api, sha)}?size={len(data)}")
    assert status == 200 and st == {"sha256": sha, "size": len(data), "stored": False,
                                    "part_bytes": PART, "parts": []}
    upload(api, data, parts=[2, 0])
    assert api.get(f"{blob_path(api, sha)}?size={len(data)}")[1]["parts"] == [0, 2]
    # Completing with a part missing names it; a commit before completion is refused.
    status, err = api.post(f"{blob_path(api, sha)}/complete", {"size": len(data)})
    assert status == 409 and "part 1 of 3 is missing" in err["error"]["message"]
    files = [{"path": "model.pt", "sha256": sha, "size": len(data)}]
    status, err = commit(api, "ckpt", files)
    assert status == 409 and "model.pt" in err["error"]["message"], err
    upload(api, data, parts=[1])
    status, done = api.post(f"{blob_path(api, sha)}/complete", {"size": len(data)})
    assert status == 200 and done["stored"] is True

    run = make_run(api, name="trainer")
    join(api, run, "rank0")
    status, v0 = commit(api, "ckpt", files, run=run["id"], writer="rank0",
                        metadata={"epoch": 3}, aliases=["best"], description="first")
    assert status == 201, v0
    assert (v0["version"], v0["index"], v0["created"], v0["size"], v0["file_count"]) == \
        ("v0", 0, True, len(data), 1)
    assert v0["aliases"] == ["best", "latest"] and v0["metadata"] == {"epoch": 3}
    assert v0["run"] == run["id"] and v0["writer"] == "rank0"

    status, got = api.get(f"{arts(api)}/ckpt/latest")
    assert status == 200 and got["digest"] == v0["digest"]
    assert got["produced_by"]["run"] == run["id"] and got["used_by"] == []
    [f] = got["files"]
    assert f["sha256"] == sha and f["size"] == len(data)
    # Large files come in ranges; a range across a part boundary; the tail.
    status, hdrs, body = raw(api, "GET", f["url"])
    assert status == 200 and body == data and hdrs["ETag"] == f'"{sha}"'
    status, hdrs, body = raw(api, "GET", f["url"], headers={"Range": f"bytes={PART - 5}-{PART + 4}"})
    assert status == 206 and body == data[PART - 5:PART + 5]
    assert hdrs["Content-Range"] == f"bytes {PART - 5}-{PART + 4}/{len(data)}"
    status, _, body = raw(api, "GET", f["url"], headers={"Range": "bytes=-7"})
    assert status == 206 and body == data[-7:]
    status, hdrs, _ = raw(api, "GET", f["url"], headers={"Range": f"bytes={len(data)}-"})
    assert status == 416 and hdrs["Content-Range"] == f"bytes */{len(data)}"
    whole = b"".join(raw(api, "GET", f["url"], headers={"Range": f"bytes={o}-{o + PART - 1}"})[2]
                     for o in range(0, len(data), PART))
    assert hashlib.sha256(whole).hexdigest() == sha

    # The same manifest again is the same version: nothing new.
    status, again = commit(api, "ckpt", files, aliases=["prod"])
    assert status == 200 and again["created"] is False and again["version"] == "v0"
    assert again["aliases"] == ["best", "latest", "prod"]
    # Another entity sees nothing of it.
    other = server.api(create_key(server, "rival"))
    assert other.get(f"/api/v1/artifacts/{entity(api)}/proj/ckpt/v0")[0] == 404
    assert other.get(f"/api/v1/blobs/{entity(api)}/{sha}?size={len(data)}")[0] == 404
    status, err = other.post(f"/api/v1/artifacts/rival/proj/stolen", {"type": "model",
                                                                      "files": files})
    assert status == 409, err  # rival does not hold the blob: it must upload it


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def test_a_long_range_comes_whole_one_part_in_memory_at_a_time(server, api):
    # 5 parts: a range of all but the first byte is longer than the 32 MiB a range was cut to,
    # and three at once held three times that in the server's memory before they streamed.
    data = os.urandom(5 * PART - 3)
    sha = upload(api, data)
    status, _ = commit(api, "big", [{"path": "w.bin", "sha256": sha, "size": len(data)}])
    assert status == 201
    url = api.get(f"{arts(api)}/big/latest")[1]["files"][0]["url"]
    before = peak_rss_mib(server.proc.pid)
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda _: raw(api, "GET", url, headers={"Range": "bytes=1-"}),
                            range(3)))
    for status, hdrs, body in got:
        assert status == 206 and hdrs["Content-Range"] == f"bytes 1-{len(data) - 1}/{len(data)}"
        assert body == data[1:]
    grown = peak_rss_mib(server.proc.pid) - before
    if not SANITIZER:  # shadow memory and ASan's quarantine multiply a buffer's resident size
        assert grown < 48, f"the server's peak memory grew by {grown:.0f} MiB for three ranges"


def test_bytes_that_are_not_the_blob_are_refused_and_dropped(server, api):
    data = os.urandom(1000)
    claimed = hashlib.sha256(b"something else").hexdigest()
    status, _, _ = raw(api, "PUT", f"{blob_path(api, claimed)}/parts/0?size=1000", data)
    assert status == 200
    status, err = api.post(f"{blob_path(api, claimed)}/complete", {"size": 1000})
    assert status == 400 and "upload the file again" in err["error"]["message"]
    assert hashlib.sha256(data).hexdigest() in err["error"]["message"]
    assert api.get(f"{blob_path(api, claimed)}?size=1000")[1] == {
        "sha256": claimed, "size": 1000, "stored": False, "part_bytes": PART, "parts": []}
    # A part of the wrong length never lands.
    status, _, body = raw(api, "PUT", f"{blob_path(api, claimed)}/parts/0?size=1000", data[:10])
    assert status == 400 and b"1000 bytes, not 10" in body


def test_an_upload_by_id_is_checked_against_the_digest_its_completion_brings(server, api):
    """`cohort artifact put` sends a file's parts before it knows the digest: the upload is named
    by an id the client made up, and the completion brings the digest (docs/api.md)."""
    data = os.urandom(PART + 999)
    sha = hashlib.sha256(data).hexdigest()
    upload_id = "ab" * 16
    base = f"/api/v1/blobs/{entity(api)}/uploads/{upload_id}"
    size = len(data)
    status, st = api.get(f"{base}?size={size}")
    assert status == 200 and st == {"upload": upload_id, "size": size, "part_bytes": PART,
                                    "parts": []}, st

    def put_parts():
        for n in (1, 0):
            status, _, body = raw(api, "PUT", f"{base}/parts/{n}?size={size}",
                                  data[n * PART:(n + 1) * PART])
            assert status == 200, body

    put_parts()
    assert api.get(f"{base}?size={size}")[1]["parts"] == [0, 1]
    # The completion must bring the digest, and a digest of other bytes drops the parts.
    status, err = api.post(f"{base}/complete", {"size": size})
    assert status == 400 and "sha256" in err["error"]["message"], err
    status, err = api.post(f"{base}/complete", {"size": size, "sha256": "x" * 64})
    assert status == 400 and "64 lowercase hex" in err["error"]["message"], err
    status, err = api.post(f"{base}/complete", {"size": size, "sha256": sha, "md5": "x"})
    assert status == 400 and "md5" in err["error"]["message"], err
    other = hashlib.sha256(b"other bytes").hexdigest()
    status, err = api.post(f"{base}/complete", {"size": size, "sha256": other})
    assert status == 400 and sha in err["error"]["message"] and other in err["error"]["message"]
    assert api.get(f"{base}?size={size}")[1]["parts"] == []
    assert api.get(f"{blob_path(api, other)}?size={size}")[1]["stored"] is False
    assert api.get(f"{blob_path(api, sha)}?size={size}")[1]["stored"] is False
    # Sent again and completed with the right digest: the entity holds the blob.
    put_parts()
    status, done = api.post(f"{base}/complete", {"size": size, "sha256": sha})
    assert status == 200 and done == {"sha256": sha, "size": size, "stored": True}, done
    assert api.get(f"{blob_path(api, sha)}?size={size}")[1]["stored"] is True
    status, v = commit(api, "by-id", [{"path": "w.bin", "sha256": sha, "size": size}])
    assert status == 201, v
    status, _, body = raw(api, "GET", api.get(f"{arts(api)}/by-id/v0")[1]["files"][0]["url"])
    assert status == 200 and body == data
    # A completion of a blob the entity holds is answered at once.
    status, done = api.post(f"{base}/complete", {"size": size, "sha256": sha})
    assert status == 200 and done["stored"] is True
    # An id is 32 lowercase hex digits; an upload by id never shares parts with one by digest.
    for bad in ("xyz", "AB" * 16, "a" * 31, "a" * 64):
        status, err = api.get(f"/api/v1/blobs/{entity(api)}/uploads/{bad}?size=10")
        assert status == 400 and "32 lowercase hex" in err["error"]["message"], (bad, err)
    digest_named = os.urandom(100)
    status, _, _ = raw(api, "PUT", f"{blob_path(api, hashlib.sha256(digest_named).hexdigest())}"
                       "/parts/0?size=100", digest_named)
    assert status == 200
    status, err = api.post(f"/api/v1/blobs/{entity(api)}/uploads/{'cd' * 16}/complete",
                           {"size": 100, "sha256": hashlib.sha256(digest_named).hexdigest()})
    assert status == 409 and "missing" in err["error"]["message"], err


def test_bad_manifests_are_refused_with_nothing_committed(server, api):
    sha = upload(api, b"weights")
    good = {"path": "w.bin", "sha256": sha, "size": 7}
    cases = [
        ("a/b", [good], "artifact name"),
        ("..", [good], "artifact name"),
        ("bad\x01", [good], "artifact name"),
        ("ok", [dict(good, path="../escape")], "'.' and '..'"),
        ("ok", [dict(good, path="/abs")], "relative"),
        ("ok", [dict(good, path="a\x07b")], "control characters"),
        ("ok", [dict(good, size=8)], "the manifest says 8 bytes"),
        ("ok", [good, good], "appears twice"),
        ("ok", [dict(good, sha256="ab" * 32)], "not uploaded"),
        ("ok", [{"path": "r", "ref": "ftp://x/y"}], "ref must be"),
        # References are not stored here (no size limit), but their sizes must add up: two of
        # 2^62 made a version of negative size.
        ("ok", [{"path": "r1", "ref": "s3://b/r1", "size": 1 << 62},
                {"path": "r2", "ref": "s3://b/r2", "size": 1 << 62}], "add up past 2^63"),
    ]
    for name, files, words in cases:
        status, err = commit(api, name.replace("\x01", "%01").replace("/", "%2F"), files)
        assert status in (400, 404, 409), (name, files, err)
        if status != 404:
            assert words in err["error"]["message"], (name, files, err)
    status, err = commit(api, "ok", [good], aliases=["v2"])
    assert status == 400 and "reserved" in err["error"]["message"]
    status, err = commit(api, "ok", [good], run="no-such-run")
    assert status == 404
    assert api.get(arts(api))[1] == {"collections": []}
    # The type is the collection's.
    assert commit(api, "ok", [good])[0] == 201
    status, err = commit(api, "ok", [dict(good, path="other")], type="dataset")
    assert status == 409 and 'is of type "model"' in err["error"]["message"]
    assert len(api.get(f"{arts(api)}/ok/versions")[1]["versions"]) == 1


def test_versions_aliases_lineage_and_deletion(server, api):
    producer = make_run(api, name="producer")
    consumer = make_run(api, name="consumer")
    shas = [upload(api, f"epoch-{i}".encode()) for i in range(3)]
    for i, sha in enumerate(shas):
        status, v = commit(api, "ckpt", [{"path": "model.pt", "sha256": sha, "size": 7}],
                           run=producer["id"])
        assert status == 201 and v["version"] == f"v{i}"
    status, cols = api.get(arts(api))
    assert [(c["name"], c["type"], c["version_count"], c["latest"]["version"])
            for c in cols["collections"]] == [("ckpt", "model", 3, "v2")]
    assert [v["version"] for v in api.get(f"{arts(api)}/ckpt/versions")[1]["versions"]] == \
        ["v2", "v1", "v0"]

    status, moved = api.put(f"{arts(api)}/ckpt/aliases/best", {"version": "v1"})
    assert status == 200 and moved["aliases"] == ["best"]
    assert api.get(f"{arts(api)}/ckpt/best")[1]["version"] == "v1"
    assert api.put(f"{arts(api)}/ckpt/aliases/latest", {"version": "v0"})[0] == 400

    status, used = api.post(f"{arts(api)}/ckpt/best/use", {"run": consumer["id"],
                                                            "writer": "rank3"})
    assert status == 200 and used["version"] == "v1"
    status, runs_arts = api.get(f"/api/v1/runs/{entity(api)}/proj/{consumer['id']}/artifacts")
    assert [(a["name"], a["version"], a["direction"], a["used_by_writer"])
            for a in runs_arts["artifacts"]] == [("ckpt", "v1", "input", "rank3")]
    status, prod_arts = api.get(f"/api/v1/runs/{entity(api)}/proj/{producer['id']}/artifacts")
    assert [(a["version"], a["direction"]) for a in prod_arts["artifacts"]] == \
        [("v0", "output"), ("v1", "output"), ("v2", "output")]
    v1 = api.get(f"{arts(api)}/ckpt/v1")[1]
    assert [(u["run"], u["writer"]) for u in v1["used_by"]] == [(consumer["id"], "rank3")]

    assert api.delete(f"{arts(api)}/ckpt/v2")[0] == 200
    assert api.get(f"{arts(api)}/ckpt/latest")[1]["version"] == "v1"
    assert api.delete(f"{arts(api)}/ckpt/v2")[0] == 404
    assert api.delete(f"{arts(api)}/ckpt/aliases/best")[0] == 200
    assert api.get(f"{arts(api)}/ckpt/best")[0] == 404


def test_an_upload_resumes_after_the_server_is_killed(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        api = server.api()
        data = os.urandom(PART + 100)
        sha = upload(api, data, parts=[0])
        server.stop(signal.SIGKILL)
        server = ServerProcess(tmp_path).start()
        api = server.api()
        assert api.get(f"{blob_path(api, sha)}?size={len(data)}")[1]["parts"] == [0]
        upload(api, data, parts=[1])
        assert api.post(f"{blob_path(api, sha)}/complete", {"size": len(data)})[0] == 200
        assert commit(api, "m", [{"path": "f", "sha256": sha, "size": len(data)}])[0] == 201
        server.stop(signal.SIGKILL)
        server = ServerProcess(tmp_path).start()
        api = server.api()
        f = api.get(f"{arts(api)}/m/latest")[1]["files"][0]
        status, _, body = raw(api, "GET", f["url"])
        assert status == 200 and hashlib.sha256(body).hexdigest() == sha
    finally:
        server.stop()


def test_gc_removes_only_what_no_version_references_while_the_server_runs(server, api):
    import subprocess
    from conftest import COHORT_BIN
    old, kept = os.urandom(3000), os.urandom(4000)
    sha_old, sha_kept = upload(api, old), upload(api, kept)
    assert commit(api, "m", [{"path": "w", "sha256": sha_old, "size": len(old)}])[0] == 201
    assert commit(api, "m", [{"path": "w", "sha256": sha_kept, "size": len(kept)}])[0] == 201
    blob_file = server.data_dir / "blobs" / "sha256" / sha_old[:2] / sha_old

    def gc(*args):
        r = subprocess.run([str(COHORT_BIN), "gc", "--data-dir", str(server.data_dir), *args],
                           capture_output=True, text=True, env=server.env, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout
    # Referenced by v0: nothing to remove; young blobs are kept by the grace period.
    assert gc("--grace-hours", "0").startswith("would remove 0 blob record(s)")
    assert api.delete(f"{arts(api)}/m/v0")[0] == 200
    assert gc().startswith("would remove 0 blob record(s)")  # 24 h of grace by default
    out = gc("--grace-hours", "0")
    assert out.startswith("would remove 1 blob record(s) no version references and up to 1 file"), out
    assert blob_file.exists()  # a dry run removes nothing
    out = gc("--grace-hours", "0", "--apply")
    assert out.startswith("removed 1 blob record(s) no version references and 1 file(s)"), out
    assert not blob_file.exists()
    assert api.get(f"{blob_path(api, sha_old)}?size={len(old)}")[1]["stored"] is False
    f = api.get(f"{arts(api)}/m/latest")[1]["files"][0]
    status, _, body = raw(api, "GET", f["url"])
    assert status == 200 and body == kept
    # What was collected can be uploaded and committed again.
    assert upload(api, old) == sha_old
    assert commit(api, "m", [{"path": "w", "sha256": sha_old, "size": len(old)}])[0] == 201


def test_gc_on_a_mistyped_or_empty_store_refuses_and_removes_nothing(server, api, tmp_path):
    # A --data-dir naming no store made a new empty one, which references no blob: gc --apply
    # removed every file of the blob directory it was given and exited 0.
    import subprocess
    from conftest import COHORT_BIN
    data = os.urandom(3000)
    sha = upload(api, data)
    assert commit(api, "keep", [{"path": "w", "sha256": sha, "size": len(data)}])[0] == 201
    blob_file = server.data_dir / "blobs" / "sha256" / sha[:2] / sha
    typo = tmp_path / "nothing"
    for args in (["--data-dir", str(typo)],
                 ["--store", f"sqlite://{typo}/cohort.db"]):
        r = subprocess.run([str(COHORT_BIN), "gc", *args, "--blob-dir",
                            str(server.data_dir / "blobs"), "--grace-hours", "0", "--apply"],
                           capture_output=True, text=True, env=server.env, timeout=60)
        assert r.returncode != 0 and "no such SQLite file" in r.stderr, (r.stdout, r.stderr)
        assert not (typo / "cohort.db").exists()
    # A store no server ran on (no API key): the same.
    import sqlite3
    typo.mkdir()
    sqlite3.connect(typo / "cohort.db").close()
    r = subprocess.run([str(COHORT_BIN), "gc", "--data-dir", str(typo), "--blob-dir",
                        str(server.data_dir / "blobs"), "--grace-hours", "0", "--apply"],
                       capture_output=True, text=True, env=server.env, timeout=60)
    assert r.returncode != 0 and "holds no API key" in r.stderr, (r.stdout, r.stderr)
    assert blob_file.exists()
    f = api.get(f"{arts(api)}/keep/latest")[1]["files"][0]
    assert raw(api, "GET", f["url"])[2] == data
    r = subprocess.run([str(COHORT_BIN), "keys", "create", "--entity", "x", "--data-dir",
                        str(tmp_path / "typo2")], capture_output=True, text=True,
                       env=server.env, timeout=60)
    assert r.returncode != 0 and not (tmp_path / "typo2").exists(), (r.stdout, r.stderr)
    # A store whose keys were all revoked is still the servers' store (`keys create` is how
    # one gets a key back): it is opened.
    server.stop()
    with sqlite3.connect(server.data_dir / "cohort.db") as db:
        db.execute("UPDATE api_keys SET revoked = 1")
    r = subprocess.run([str(COHORT_BIN), "keys", "create", "--entity", "x", "--data-dir",
                        str(server.data_dir)], capture_output=True, text=True,
                       env=server.env, timeout=60)
    assert r.returncode == 0 and "ck_" in r.stdout, (r.stdout, r.stderr)


def test_gc_leaves_an_old_blob_that_an_upload_just_found_held(tmp_path):
    """An uploader that finds a blob held skips it and logs what names it next (a media row, a
    table cell, a version): gc must not forget the blob in between. The status call moves the
    blob's recorded time, so the grace period covers what follows (docs/artifacts.md)."""
    import sqlite3
    import subprocess
    from conftest import COHORT_BIN
    server = ServerProcess(tmp_path).start()
    try:
        api = server.api()
        found, idle = os.urandom(2000), os.urandom(2100)
        sha_found, sha_idle = upload(api, found), upload(api, idle)
        server.stop()
        # Both recorded long ago, and named by nothing (their run or version is gone).
        with sqlite3.connect(server.data_dir / "cohort.db") as db:
            db.execute("UPDATE blobs SET created_ms = 1000")
        server = ServerProcess(tmp_path).start()
        api = server.api()
        # A client about to log an image it logged long ago asks whether it must upload it.
        assert api.get(f"{blob_path(api, sha_found)}?size={len(found)}")[1]["stored"] is True
        r = subprocess.run([str(COHORT_BIN), "gc", "--data-dir", str(server.data_dir),
                            "--grace-hours", "1", "--apply"],
                           capture_output=True, text=True, env=server.env, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("removed 1 blob record(s) no version references and 1 file"), r.stdout
        assert api.get(f"{blob_path(api, sha_found)}?size={len(found)}")[1]["stored"] is True
        assert api.get(f"{blob_path(api, sha_idle)}?size={len(idle)}")[1]["stored"] is False
    finally:
        server.stop()


def test_an_entity_cannot_list_complete_or_spoil_another_entitys_upload(server, api):
    """Each entity uploads apart (blob::OwnedUploadName): holding a blob means having sent its
    bytes. Before, uploads were named by (sha256, size) alone: another entity could complete
    an upload it never sent a byte of (and then read the blob), see which parts were stored,
    or put a bad part that failed the owner's upload."""
    bob = server.api(create_key(server, "bob"))
    data = os.urandom(PART + 5000)
    sha = hashlib.sha256(data).hexdigest()
    upload(api, data, parts=[0, 1])  # every part, not completed yet (an agent killed here)
    bob_blob = f"/api/v1/blobs/bob/{sha}"
    status, st = bob.get(f"{bob_blob}?size={len(data)}")
    assert status == 200 and st["stored"] is False and st["parts"] == [], st
    status, body = bob.post(f"{bob_blob}/complete", {"size": len(data)})
    assert status == 409 and "part 0" in body["error"]["message"], (status, body)
    assert bob.get(f"{bob_blob}?size={len(data)}")[1]["stored"] is False
    # Bob's garbage part 0 lands in Bob's upload, not in the owner's.
    status, _, body = raw(bob, "PUT", f"{bob_blob}/parts/0?size={len(data)}", b"x" * PART)
    assert status == 200, body
    status, done = api.post(f"{blob_path(api, sha)}/complete", {"size": len(data)})
    assert status == 200 and done["stored"] is True, done
    # Bob still holds nothing, and what he sent fails only his own upload.
    assert bob.get(f"{bob_blob}?size={len(data)}")[1]["stored"] is False
    status, _, body = raw(bob, "PUT", f"{bob_blob}/parts/1?size={len(data)}", data[PART:])
    assert status == 200, body
    status, body = bob.post(f"{bob_blob}/complete", {"size": len(data)})
    assert status == 400 and "not the blob announced" in body["error"]["message"], body
    # Sending the bytes is how Bob comes to hold it (then the stored blob is shared).
    assert upload(bob, data) == sha


def test_markers_left_without_data_by_a_killed_publish_are_not_listed(server, api):
    """A server killed while publishing an upload (its data renamed into the store, the upload
    directory not yet removed) leaves part markers without data: they must not be listed, or a
    client skips those parts and its completion fails."""
    data = os.urandom(3000)
    sha = hashlib.sha256(data).hexdigest()
    upload(api, data, parts=[0])
    uploads = list((server.data_dir / "blobs" / "uploads").iterdir())
    assert len(uploads) == 1 and (uploads[0] / "part-0").exists(), uploads
    (uploads[0] / "data").unlink()  # what the rename leaves behind
    assert api.get(f"{blob_path(api, sha)}?size={len(data)}")[1]["parts"] == []
    assert upload(api, data) == sha


def test_a_part_streams_into_the_store_and_only_a_whole_one_is_kept(server, api):
    """A part's body is written to the store as it arrives (not held whole in memory): a body
    cut midway (the client gone) leaves no part listed, and a part of a blob the entity holds
    already is read to its end and answered on a connection that stays usable."""
    import http.client
    import socket
    from urllib.parse import urlparse

    data = os.urandom(PART + 100)
    sha = hashlib.sha256(data).hexdigest()
    host = urlparse(api.url)
    with socket.create_connection((host.hostname, host.port), timeout=30) as s:
        s.sendall((f"PUT {blob_path(api, sha)}/parts/0?size={len(data)} HTTP/1.1\r\n"
                   f"Host: x\r\nAuthorization: Bearer {api.key}\r\n"
                   f"Content-Length: {PART}\r\n\r\n").encode() + data[:PART // 2])
    # What came was written as it came (half a part on disk, never the whole body in memory),
    # and the part is not listed, then or once the server has seen the connection close.
    import time
    deadline = time.monotonic() + 20
    written = 0
    while written < PART // 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        written = sum(p.stat().st_size
                      for p in (server.data_dir / "blobs" / "uploads").glob("*/data"))
    assert written == PART // 2
    time.sleep(0.3)
    status = api.get(f"{blob_path(api, sha)}?size={len(data)}")[1]
    assert status["parts"] == [] and status["stored"] is False, status
    assert upload(api, data) == sha
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    headers = {"Authorization": "Bearer " + api.key}
    conn.request("PUT", f"{blob_path(api, sha)}/parts/1?size={len(data)}", data[PART:], headers)
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (200, b'{"part":1,"size":100,"stored":true}')
    conn.request("GET", f"{blob_path(api, sha)}?size={len(data)}", headers=headers)
    resp = conn.getresponse()  # the same connection: the body was read to its end
    assert resp.status == 200 and b'"stored":true' in resp.read()
    conn.close()
