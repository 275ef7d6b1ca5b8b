"""What the server keeps on disk is private to its user, and upload URLs cannot be forged from what
the store holds: the data directory is 0700, every file in it (the SQLite database with its WAL
and shared memory, the URL signing keys, the login link) and every dump 0600; upload URLs are
signed with a key kept outside the store, shared by servers that are given the same keys, and
rotatable."""
import hashlib
import hmac
import os
import sqlite3
import stat
import subprocess
import urllib.parse

from conftest import COHORT_BIN, ServerProcess
from security_helpers import http


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def upload_url(server, key, run="r1", name="notes.txt"):
    """An upload URL from the W&B CreateRunFiles mutation, for a run it makes first."""
    upsert = """mutation U($n: String) { upsertBucket(input: {modelName: "proj", name: $n}) {
             bucket { id } } }"""
    status, payload, _ = http(server.url + "/graphql", "POST",
                              {"query": upsert, "variables": {"n": run}}, key=key, basic=True)
    assert status == 200 and "errors" not in payload, payload
    files = """mutation F($n: String!, $f: String!) { createRunFiles(input: {projectName: "proj",
             runName: $n, files: [$f]}) { files { name uploadUrl } } }"""
    status, payload, _ = http(server.url + "/graphql", "POST",
                              {"query": files, "variables": {"n": run, "f": name}}, key=key,
                              basic=True)
    assert status == 200 and "errors" not in payload, payload
    return payload["data"]["createRunFiles"]["files"][0]["uploadUrl"]


def test_data_directory_and_every_file_in_it_are_private(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        key = server.config["api_key"]
        e = http(server.url + "/api/v1/viewer", key=key)[1]["entity"]
        assert http(server.url + f"/api/v1/runs/{e}/proj", "POST", {"id": "r1"}, key=key)[0] == 201
        data = server.data_dir
        assert mode(data) == 0o700
        names = sorted(p.name for p in data.iterdir())
        for must in ("cohort.db", "cohort.db-wal", "cohort.db-shm", "signing.key", "login-link"):
            assert must in names, names
        assert "blobs" in names, names
        for p in data.iterdir():
            # Files 0600; directories (the blob store's) 0700.
            assert mode(p) == (0o700 if p.is_dir() else 0o600), (p.name, oct(mode(p)))
        # A dump holds everything the store does.
        out = tmp_path / "dumps"
        r = subprocess.run([str(COHORT_BIN), "export", "--store", str(data / "cohort.db"),
                            "--out", str(out) + "/", "--progress", "never"],
                           capture_output=True, text=True, env=server.env, timeout=60)
        assert r.returncode == 0, r.stderr
        dump = r.stdout.strip()
        assert mode(dump) == 0o600
    finally:
        server.stop()


def test_a_data_directory_left_open_is_made_private_at_start(tmp_path):
    server = ServerProcess(tmp_path).start()
    server.stop()
    data = server.data_dir
    os.chmod(data, 0o755)
    for p in data.iterdir():
        os.chmod(p, 0o644)
    server = ServerProcess(tmp_path).start()
    try:
        assert mode(data) == 0o700
        assert all(mode(p) == (0o700 if p.is_dir() else 0o600) for p in data.iterdir()), [
            (p.name, oct(mode(p))) for p in data.iterdir()]
        server.stop()
        assert "made the data directory" in server.proc.stderr.read()
    finally:
        server.stop()


def test_a_directory_holding_other_files_is_refused_and_left_as_it_was(tmp_path):
    """--data-dir /tmp or $HOME given by mistake: nothing in it changes mode (the sticky bit of a
    shared directory included), no store is made there, and the server says what to do."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "notes.txt").write_text("x")
    os.chmod(shared / "notes.txt", 0o644)
    (shared / "tool.sh").write_text("x")
    os.chmod(shared / "tool.sh", 0o755)
    (shared / "sub").mkdir(mode=0o755)
    before = {p.name: mode(p) for p in shared.iterdir()}
    server = ServerProcess(tmp_path)
    server.data_dir = shared
    try:
        server.start()
        raise AssertionError("the server started in a directory that holds other files")
    except RuntimeError as e:
        assert f"--data-dir {shared} is not empty and holds no Cohort store" in str(e), e
        assert "give a new or empty directory" in str(e), e
    assert server.proc.returncode not in (None, 0)
    assert mode(shared) == 0o1777
    assert {p.name: mode(p) for p in shared.iterdir()} == before


def test_an_empty_directory_is_made_private_and_a_store_keeps_files_not_its_own(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    os.chmod(empty, 0o755)
    server = ServerProcess(tmp_path)
    server.data_dir = empty
    server.start()
    server.stop()
    assert mode(empty) == 0o700
    # A store with a file of the operator's beside it (and left open): the store starts, its own
    # files are made private again, the operator's file is not touched.
    os.chmod(empty, 0o755)
    os.chmod(empty / "signing.key", 0o644)
    (empty / "README").write_text("backups at 3am")
    os.chmod(empty / "README", 0o644)
    server = ServerProcess(tmp_path)
    server.data_dir = empty
    server.start()
    try:
        assert mode(empty) == 0o700
        assert mode(empty / "signing.key") == 0o600
        assert mode(empty / "README") == 0o644
    finally:
        server.stop()


def test_a_data_directory_holding_only_files_cohort_wrote_under_custom_names_restarts(tmp_path):
    """A store elsewhere (PostgreSQL, or SQLite outside the data directory) with
    --signing-key-file <data-dir>/keys and --blob-dir <data-dir>/myblobs: the first start writes
    only those there; the second was refused as a directory holding no Cohort store."""
    data = tmp_path / "data"
    args = ["--store", f"sqlite://{tmp_path / 'elsewhere.db'}",
            "--signing-key-file", str(data / "keys"), "--blob-dir", str(data / "myblobs")]
    server = ServerProcess(tmp_path, extra_args=args).start()
    server.stop()
    (data / "myblobs").mkdir(exist_ok=True)  # made when the first artifact is kept, if not at start
    assert (data / "keys").is_file()
    assert {p.name for p in data.iterdir()} <= {"keys", "myblobs", "login-link", "admin-key"}, [
        p.name for p in data.iterdir()]
    # The login link (and admin key) of a SQLite store's first start; a PostgreSQL server
    # writes neither there: only the custom-named files are left.
    for name in ("login-link", "admin-key"):
        (data / name).unlink(missing_ok=True)
    os.chmod(data, 0o755)
    os.chmod(data / "myblobs", 0o755)
    server = ServerProcess(tmp_path, extra_args=args).start()
    try:
        assert mode(data) == 0o700
        assert mode(data / "myblobs") == 0o700  # counted as Cohort's own: made private again
    finally:
        server.stop()
    # Only a file of its own under a name it was not given: still refused.
    server = ServerProcess(tmp_path, extra_args=args[:2] + ["--signing-key-file",
                                                            str(tmp_path / "k2")])
    for p in list(data.iterdir()):
        if p.name != "keys":
            subprocess.run(["rm", "-rf", str(p)], check=True)
    try:
        server.start()
        raise AssertionError("the server started in a directory that holds another file")
    except RuntimeError as e:
        assert "is not empty and holds no Cohort store (it holds keys)" in str(e), e


def test_signature_computed_from_the_stored_key_hash_is_refused(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        key = server.config["api_key"]
        url = upload_url(server, key)
        assert http(url, "PUT", raw=b"from the real URL")[0] == 200
        # What a local user (or a database dump, or a replica) has: the key hashes.
        db = sqlite3.connect(f"file:{server.data_dir / 'cohort.db'}?mode=ro", uri=True)
        key_id, key_hash = db.execute("SELECT pk, hash FROM api_keys").fetchone()
        db.close()
        assert key_hash == hashlib.sha256(key.encode()).hexdigest()
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        entity, project, run = parts.path.split("/")[2:5]
        target = "evil.txt"
        for message in (  # the old scheme's message, and the current one's
                f"PUT\n{entity}\n{project}\n{run}\n{target}\n{query['x']}",
                f"PUT\n{key_id}\n{entity}\n{project}\n{run}\n{target}\n{query['x']}"):
            sig = hmac.new(key_hash.encode(), message.encode(), hashlib.sha256).hexdigest()
            forged = (f"{parts.scheme}://{parts.netloc}/files/{entity}/{project}/{run}/upload/"
                      f"{target}?k={key_id}&x={query['x']}&s={sig}")
            status, body, _ = http(forged, "PUT", raw=b"forged")
            assert status == 401, (status, body)
            assert "invalid signature" in body["error"]["message"]
        e = http(server.url + "/api/v1/viewer", key=key)[1]["entity"]
        names = [f["name"] for f in http(server.url + f"/api/v1/runs/{e}/proj/r1/files",
                                         key=key)[1]["files"]]
        assert names == ["notes.txt"]
    finally:
        server.stop()


def test_large_uploads_pass_the_body_gate_only_with_a_valid_signature(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        key = server.config["api_key"]
        url = upload_url(server, key, name="big.bin")
        body = os.urandom(200 << 10)  # past the 16 KiB from which bodies wait for credentials
        status, stored, _ = http(url, "PUT", raw=body)
        assert status == 200 and stored["size"] == len(body), stored
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        query["s"] = "0" * 64
        bad = parts._replace(query=urllib.parse.urlencode(query)).geturl()
        status, payload, _ = http(bad, "PUT", raw=body)
        assert status == 401 and "invalid signature" in payload["error"]["message"], payload
        status, metrics, _ = http(server.url + "/metrics")
        assert "cohort_http_bodies_refused_total 1" in metrics
    finally:
        server.stop()


def test_servers_given_the_same_keys_accept_each_others_urls_and_keys_rotate(tmp_path):
    old = "a" * 40
    new = "b" * 40
    store = f"sqlite://{tmp_path / 'shared.db'}"
    a = ServerProcess(tmp_path / "a", ["--store", store],
                      env={"COHORT_SIGNING_KEYS": old}).start()
    try:
        key = a.config["api_key"]
        url_old = upload_url(a, key, name="one.txt")
        # Another server on the same store, keys rotated: the new key signs, the old one is
        # still accepted.
        b = ServerProcess(tmp_path / "b", ["--store", store],
                          env={"COHORT_SIGNING_KEYS": f"{new},{old}"}).start()
        try:
            url_b = upload_url(b, key, name="two.txt")
            assert "s=" in url_b
            base_b = urllib.parse.urlsplit(b.url)
            moved = urllib.parse.urlsplit(url_old)._replace(netloc=base_b.netloc).geturl()
            assert http(moved, "PUT", raw=b"signed by a, checked by b")[0] == 200
            # A URL signed with the new key is refused by a server that does not have it.
            base_a = urllib.parse.urlsplit(a.url)
            to_a = urllib.parse.urlsplit(url_b)._replace(netloc=base_a.netloc).geturl()
            status, body, _ = http(to_a, "PUT", raw=b"x")
            assert status == 401, body
            assert http(url_b, "PUT", raw=b"signed by b")[0] == 200
        finally:
            b.stop()
    finally:
        a.stop()


def test_short_signing_keys_and_open_key_files_stop_the_server(tmp_path):
    r = subprocess.run([str(COHORT_BIN), "server", "--port", "0", "--data-dir",
                        str(tmp_path / "d1")], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, HOME=str(tmp_path), COHORT_SIGNING_KEYS="short"))
    assert r.returncode == 1 and "shorter than 32 characters" in r.stderr, r.stderr
    keyfile = tmp_path / "signing.key"
    keyfile.write_text("k" * 40 + "\n")
    keyfile.chmod(0o644)
    r = subprocess.run([str(COHORT_BIN), "server", "--port", "0", "--data-dir",
                        str(tmp_path / "d2"), "--signing-key-file", str(keyfile)],
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, HOME=str(tmp_path)))
    assert r.returncode == 1 and "chmod 600" in r.stderr, r.stderr


def test_an_empty_signing_key_file_left_by_a_killed_start_is_replaced(tmp_path):
    # A start killed between creating signing.key and writing its key left it empty, and every
    # later start failed ("no signing key"). New keys are written under another name and linked.
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    keyfile = data / "signing.key"
    keyfile.touch(mode=0o600)
    server = ServerProcess(tmp_path).start()
    try:
        key = keyfile.read_text().strip()
        assert len(key) == 64 and all(c in "0123456789abcdef" for c in key), key
        assert stat.S_IMODE(keyfile.stat().st_mode) == 0o600
        assert not [p.name for p in data.iterdir() if p.name.startswith("signing.key.new")]
    finally:
        server.stop()
    assert "is empty; making a new key" in server.proc.stderr.read()
