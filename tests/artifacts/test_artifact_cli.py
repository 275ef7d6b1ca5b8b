"""`cohort artifact put|ls|show|get` (docs/cli.md): the real binary against a real server, a
round trip of a directory with a multi-part file, uploads that resume, downloads that verify."""
import json
import os
import subprocess
import time

import pytest

import art_helpers
from art_helpers import PART, pattern, sha, stored_blob, upload_blob
from conftest import COHORT_BIN, ServerProcess

PROJECT = "clip"


@pytest.fixture
def srv(tmp_path):
    s = ServerProcess(tmp_path / "home").start()
    yield s
    s.stop()


@pytest.fixture
def entity(srv):
    status, me = srv.api().get("/api/v1/viewer")
    assert status == 200, me
    return me["entity"]


def cohort(srv, *args, cwd=None, env_extra=None):
    env = {k: v for k, v in srv.env.items() if k not in ("COHORT_BASE_URL", "COHORT_API_KEY")}
    env.update(env_extra or {})
    return subprocess.run([str(COHORT_BIN), *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def tree(root):
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            full = os.path.join(dirpath, n)
            out[os.path.relpath(full, root)] = open(full, "rb").read()
    return out


BIG = pattern(2 * PART + 777, "cli")
FILES = {"model.bin": BIG, "cfg/config.json": b'{"a": 1}', "notes.txt": b"hello\n",
         "cfg/empty": b""}


@pytest.fixture
def src(tmp_path):
    d = tmp_path / "src"
    for name, data in FILES.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    return d


def test_put_ls_show_get_round_trip(srv, entity, src, tmp_path):
    out = cohort(srv, "artifact", "put", src, "--name", "resnet", "--type", "model",
                 "--project", f"{entity}/{PROJECT}", "--alias", "best", "--alias", "prod",
                 "--description", "epoch 3", "--metadata", '{"epoch": 3}')
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{entity}/{PROJECT}/resnet:v0"

    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/resnet/v0")
    assert status == 200, v
    assert {f["path"]: (f["sha256"], f["size"]) for f in v["files"]} == \
        {p: (sha(d), len(d)) for p, d in FILES.items()}
    assert set(v["aliases"]) == {"best", "prod", "latest"} and v["metadata"] == {"epoch": 3}

    ls = cohort(srv, "artifact", "ls", PROJECT)  # the key's entity
    assert ls.returncode == 0, ls.stderr
    header, *rows = [line.split() for line in ls.stdout.strip().splitlines()]
    assert header[:2] == ["NAME", "TYPE"] and [r[:2] for r in rows] == [["resnet", "model"]]

    show = cohort(srv, "artifact", "show", f"{entity}/{PROJECT}/resnet:best")
    assert show.returncode == 0, show.stderr
    assert show.stdout.startswith(f"{entity}/{PROJECT}/resnet:v0\n")
    for p, d in FILES.items():
        assert p in show.stdout and sha(d) in show.stdout
    assert "epoch 3" in show.stdout and v["digest"] in show.stdout
    as_json = cohort(srv, "artifact", "show", "--json", f"{PROJECT}/resnet")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["digest"] == v["digest"]

    get = cohort(srv, "artifact", "get", f"{entity}/{PROJECT}/resnet:prod", "--root",
                 tmp_path / "dl")
    assert get.returncode == 0, get.stderr
    assert get.stdout.strip() == str(tmp_path / "dl")
    assert tree(tmp_path / "dl") == FILES
    assert "4 files downloaded and verified" in get.stderr

    # Default root, relative to the working directory.
    get = cohort(srv, "artifact", "get", f"{PROJECT}/resnet", cwd=tmp_path)
    assert get.returncode == 0, get.stderr
    assert tree(tmp_path / "artifacts" / "resnet:v0") == FILES


def test_put_of_unchanged_files_is_the_same_version_and_sends_nothing(srv, entity, src):
    args = ("artifact", "put", src, "--name", "resnet", "--type", "model", "-p", PROJECT)
    assert cohort(srv, *args).returncode == 0
    again = cohort(srv, *args, "--alias", "again")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"{entity}/{PROJECT}/resnet:v0"
    assert "(0 B sent)" in again.stderr and "no new version" in again.stderr
    (src / "notes.txt").write_bytes(b"changed\n")
    third = cohort(srv, *args)
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() == f"{entity}/{PROJECT}/resnet:v1"
    assert "(8 B sent)" in third.stderr  # only the changed file


def test_put_shares_the_hash_cache_with_the_sdk(srv, entity, tmp_path):
    """A file put before and unchanged since is not read again; the entries are the SDK's
    (docs/formats.md, "Hash cache"), in $COHORT_CACHE_DIR."""
    from cohort import artifacts  # the source tree's package (art_helpers)
    cache_env = {"COHORT_CACHE_DIR": str(tmp_path / "cache")}
    sdk_cache = artifacts.HashCache(str(tmp_path / "cache" / "artifact-held.sqlite"))
    data = pattern(PART + 11, "cached")
    f = tmp_path / "ckpt.bin"
    f.write_bytes(data)
    then = time.time() - 60  # saved a minute ago
    os.utime(f, (then, then))
    args = ("artifact", "put", f, "--name", "ckpt", "--type", "model", "-p", PROJECT)
    first = cohort(srv, *args, env_extra=cache_env)
    assert first.returncode == 0, first.stderr
    st = os.stat(f)
    assert sdk_cache.lookup(st) == sha(data)  # recorded by the CLI, read by the SDK
    # The bytes changed in place behind the cache's back (same size and time): a second put
    # answers from the cache, so it finds the version unchanged without reading the file.
    with open(f, "r+b") as out:
        out.write(b"Z" * 100)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = cohort(srv, *args, env_extra=cache_env)
    assert again.returncode == 0, again.stderr
    assert "(0 B sent)" in again.stderr and "no new version" in again.stderr
    # Without the cache the file is read: its new bytes make v1.
    fresh = cohort(srv, *args, env_extra={"COHORT_CACHE_DIR": str(tmp_path / "other-cache")})
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == f"{entity}/{PROJECT}/ckpt:v1"
    # An entry the SDK recorded is the CLI's answer too.
    g = tmp_path / "sdk.bin"
    g.write_bytes(b"from the sdk")
    os.utime(g, (then, then))
    assert sdk_cache.hash_file(str(g))["sha256"] == sha(b"from the sdk")
    with open(g, "r+b") as out:
        out.write(b"F")
    os.utime(g, (then, then))
    put_g = cohort(srv, "artifact", "put", g, "--name", "g", "--type", "model", "-p", PROJECT,
                   env_extra=cache_env)
    # The server finds other bytes than the cached digest's: the entry goes, the file is read
    # and uploaded again, and the version names the bytes sent.
    assert put_g.returncode == 0, put_g.stderr
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/g/latest")
    assert status == 200 and v["files"][0]["sha256"] == sha(b"From the sdk"), v
    # A file written just now is read, and its digest is not recorded.
    h = tmp_path / "just-written.bin"
    h.write_bytes(b"new")
    out = cohort(srv, "artifact", "put", h, "--name", "h", "--type", "model", "-p", PROJECT,
                 env_extra=cache_env)
    assert out.returncode == 0, out.stderr
    assert sdk_cache.lookup(os.stat(h)) is None


def sent_mib(stderr):
    """The "(N MiB sent)" of a put's last line, in MiB."""
    sent = stderr.rsplit("(", 1)[1]
    assert sent.endswith(" sent)\n"), stderr
    number, unit = sent.split()[:2]
    return float(number) * {"B": 2**-20, "KiB": 2**-10, "MiB": 1, "GiB": 2**10}[unit]


def test_put_resumes_an_upload_whose_first_part_is_stored(srv, entity, tmp_path):
    """A put killed midway (its process, SIGKILL) is continued by the next put of the file: the
    upload is named by the file's identity, not by a digest the killed put may never have had."""
    data = os.urandom(24 * PART + 5000)
    (tmp_path / "m.bin").write_bytes(data)
    env = {k: v for k, v in srv.env.items() if k not in ("COHORT_BASE_URL", "COHORT_API_KEY")}
    env["COHORT_ARTIFACT_PARTS"] = "1"
    args = [str(COHORT_BIN), "artifact", "put", str(tmp_path / "m.bin"), "--name", "m", "--type",
            "model", "-p", PROJECT]
    put = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    uploads = srv.data_dir / "blobs" / "uploads"
    deadline = time.monotonic() + 60
    while len(list(uploads.glob("*/part-*"))) < 4 and time.monotonic() < deadline:
        assert put.poll() is None, put.communicate()
        time.sleep(0.002)
    put.kill()
    put.communicate()
    stored = len(list(uploads.glob("*/part-*")))
    assert 4 <= stored < 25, stored
    out = cohort(srv, *args[1:], env_extra={"COHORT_ARTIFACT_PARTS": "1"})
    assert out.returncode == 0, out.stderr
    assert sent_mib(out.stderr) <= round((len(data) - stored * PART) / 2**20, 1), out.stderr
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/m/latest")
    assert status == 200 and v["files"][0]["sha256"] == sha(data) and v["files"][0]["path"] == "m.bin"


def test_put_of_bytes_the_entity_holds_stops_once_the_hash_says_so(srv, entity, tmp_path):
    """A file the hash cache does not know is sent while it is hashed; once the digest shows that
    the entity holds the blob (the same bytes put from another path), the rest is not sent."""
    data = os.urandom(24 * PART + 1)
    (tmp_path / "a.bin").write_bytes(data)
    out = cohort(srv, "artifact", "put", tmp_path / "a.bin", "--name", "a", "--type", "model",
                 "-p", PROJECT)
    assert out.returncode == 0, out.stderr
    assert sent_mib(out.stderr) == round(len(data) / 2**20, 1), out.stderr
    (tmp_path / "b.bin").write_bytes(data)  # another file: the cache does not know it
    # One part at a time, 200 ms each (a slow link): the hash of 192 MiB ends long before.
    out = cohort(srv, "artifact", "put", tmp_path / "b.bin", "--name", "b", "--type", "model",
                 "-p", PROJECT, env_extra={"COHORT_ARTIFACT_PARTS": "1",
                                           "COHORT_ARTIFACT_PART_DELAY_MS": "200"})
    assert out.returncode == 0, out.stderr
    assert sent_mib(out.stderr) < len(data) / 2**20 / 2, out.stderr
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/b/latest")
    assert status == 200 and v["files"][0]["sha256"] == sha(data), v
    assert v["files"][0]["path"] == "b.bin"


def test_put_into_a_collection_of_another_type_is_refused_before_anything_is_sent(
        srv, entity, tmp_path):
    """The type clash was found by the commit, after every file was hashed and uploaded: the put
    reads the collection's type first and stops, naming both types."""
    (tmp_path / "a.bin").write_bytes(b"first")
    out = cohort(srv, "artifact", "put", tmp_path / "a.bin", "--name", "x", "--type", "model",
                 "-p", PROJECT)
    assert out.returncode == 0, out.stderr
    data = os.urandom(3 * PART + 17)
    (tmp_path / "b.bin").write_bytes(data)
    out = cohort(srv, "artifact", "put", tmp_path / "b.bin", "--name", "x", "--type", "dataset",
                 "-p", PROJECT)
    assert out.returncode == 1, out.stderr
    assert '"model"' in out.stderr and '"dataset"' in out.stderr, out.stderr
    assert "sent)" not in out.stderr, out.stderr
    status, blob = srv.api().get(f"/api/v1/blobs/{entity}/{sha(data)}?size={len(data)}")
    assert status == 200 and not blob["stored"] and not blob["parts"], blob
    assert not list((srv.data_dir / "blobs").rglob("part-*"))  # no upload begun, by id either
    status, versions = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/x/versions")
    assert status == 200 and len(versions["versions"]) == 1, versions


def test_put_whose_held_file_is_gone_before_the_commit_uploads_it_again(srv, entity, tmp_path):
    """gc may forget a blob between the status call that found it held and the commit (while the
    other files upload): the commit's 409 "upload it first" makes the put upload that file and
    commit once more, where it failed after every byte was sent."""
    a = os.urandom(5000)
    (tmp_path / "a.bin").write_bytes(a)
    out = cohort(srv, "artifact", "put", tmp_path / "a.bin", "--name", "x", "--type", "model",
                 "-p", PROJECT)
    assert out.returncode == 0, out.stderr
    both = tmp_path / "both"
    both.mkdir()
    (both / "a.bin").write_bytes(a)
    (both / "b.bin").write_bytes(os.urandom(3 * PART))
    env = {k: v for k, v in srv.env.items() if k not in ("COHORT_BASE_URL", "COHORT_API_KEY")}
    env.update({"COHORT_ARTIFACT_PARTS": "1", "COHORT_ARTIFACT_PART_DELAY_MS": "400"})
    put = subprocess.Popen([str(COHORT_BIN), "artifact", "put", str(both), "--name", "y",
                            "--type", "model", "-p", PROJECT], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    uploads = srv.data_dir / "blobs" / "uploads"
    deadline = time.monotonic() + 60
    while not list(uploads.glob("*/part-*")) and time.monotonic() < deadline:
        assert put.poll() is None, put.communicate()
        time.sleep(0.002)
    blob_a = stored_blob(srv, sha(a))  # a.bin was found held; b.bin's parts are on their way
    blob_a.unlink()
    stdout, stderr = put.communicate(timeout=120)
    assert put.returncode == 0, stderr
    assert "uploading it again" in stderr, stderr
    assert blob_a.read_bytes() == a
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/y/latest")
    assert status == 200, v
    assert sorted(f["path"] for f in v["files"]) == ["a.bin", "b.bin"]


class Proxy:
    """A TCP proxy in front of the server, for answers that do not come as sent. `decide`
    (request line -> what to do) says per request: "relay" (the server's answer as it is),
    "cut-head" (the client gets the status line only, then the connection closes),
    "cut" (the server gets and answers the request; the client gets the head and half the body,
    then the connection closes: an answer lost on the way; with nothing at all, libcurl would send
    the request again by itself), or bytes (the client gets these instead; the server never sees
    the request)."""

    def __init__(self, upstream, decide):
        import socket
        import threading
        from urllib.parse import urlparse
        self.upstream = urlparse(upstream)
        self.decide = decide
        self.cut = threading.Event()  # an answer was cut
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        import threading
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    @staticmethod
    def read_message(f):
        """One HTTP message (head and Content-Length body) from a buffered socket file."""
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = f.readline()
            if not line:
                return None
            head += line
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        return head + f.read(length)

    def serve(self, conn):
        import socket
        up = socket.create_connection((self.upstream.hostname, self.upstream.port))
        cf, uf = conn.makefile("rb"), up.makefile("rb")
        try:
            while True:
                request = self.read_message(cf)
                if request is None:
                    return
                what = self.decide(request.split(b"\r\n", 1)[0])
                if isinstance(what, bytes):
                    conn.sendall(what)
                    continue
                up.sendall(request)
                answer = self.read_message(uf)
                if answer is None:
                    return
                if what == "cut":
                    self.cut.set()
                    head_end = answer.index(b"\r\n\r\n") + 4
                    conn.sendall(answer[:head_end + (len(answer) - head_end) // 2])
                    return
                if what == "cut-head":  # the status line and part of the headers only
                    self.cut.set()
                    conn.sendall(answer[:answer.index(b"\r\n") + 2])
                    return
                conn.sendall(answer)
        finally:
            conn.close()
            up.close()

    def close(self):
        self.sock.close()


def put_through(srv, proxy, path, name):
    """`cohort artifact put` of `path` through `proxy`."""
    try:
        return cohort(srv, "artifact", "put", path, "--name", name, "--type", "model", "-p",
                      PROJECT, env_extra={"COHORT_BASE_URL": proxy.url,
                                          "COHORT_API_KEY": srv.config["api_key"]})
    finally:
        proxy.close()


def test_put_whose_completion_answer_is_lost_finds_the_blob_held_and_sends_nothing_again(
        srv, entity, tmp_path):
    """The completion of an upload by id stored the blob but its answer was lost: the retry asks
    whether the entity holds the blob by its digest (the upload by id is gone once published),
    instead of sending every part again."""
    data = os.urandom(8 * PART + 3)
    (tmp_path / "c.bin").write_bytes(data)
    prefix = f"POST /api/v1/blobs/{entity}/uploads/".encode()
    proxy = Proxy(srv.url, lambda line: "cut" if line.startswith(prefix) and
                  not proxy.cut.is_set() else "relay")
    out = put_through(srv, proxy, tmp_path / "c.bin", "c")
    assert proxy.cut.is_set()
    assert out.returncode == 0, out.stderr
    assert sent_mib(out.stderr) == round(len(data) / 2**20, 1), out.stderr
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/c/latest")
    assert status == 200 and v["files"][0]["sha256"] == sha(data), v


def test_put_whose_held_check_answer_ends_inside_its_head_asks_again(srv, entity, tmp_path):
    """The answer to "does the entity hold this blob?" ends after its status line (a connection
    cut on the way): a transient failure, asked again, not "the answer is not JSON"."""
    data = os.urandom(PART + 7)
    (tmp_path / "h.bin").write_bytes(data)
    prefix = f"GET /api/v1/blobs/{entity}/{sha(data)}".encode()
    proxy = Proxy(srv.url, lambda line: "cut-head" if line.startswith(prefix) and
                  not proxy.cut.is_set() else "relay")
    out = put_through(srv, proxy, tmp_path / "h.bin", "h")
    assert proxy.cut.is_set()
    assert out.returncode == 0, out.stderr
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/h/latest")
    assert status == 200 and v["files"][0]["sha256"] == sha(data), v


def test_put_to_a_server_without_uploads_by_id_goes_by_digest(srv, entity, tmp_path):
    """A server older than the client answers 404 to the routes of uploads by id: the put
    waits for the hash and uploads by digest, as those servers know."""
    data = os.urandom(8 * PART + 5)
    (tmp_path / "d.bin").write_bytes(data)
    body = b'{"error":{"code":"not_found","message":"no API route"}}'
    not_found = (b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proxy = Proxy(srv.url, lambda line: not_found if b"/uploads/" in line else "relay")
    out = put_through(srv, proxy, tmp_path / "d.bin", "d")
    assert out.returncode == 0, out.stderr
    assert sent_mib(out.stderr) == round(len(data) / 2**20, 1), out.stderr
    status, v = srv.api().get(f"/api/v1/artifacts/{entity}/{PROJECT}/d/latest")
    assert status == 200 and v["files"][0]["sha256"] == sha(data), v


def test_get_of_a_corrupted_blob_fails_and_keeps_no_file(srv, entity, tmp_path):
    data = pattern(PART + 3, "bad")
    art_helpers.log_version(srv.api(), entity, PROJECT, "bad", {"w.bin": data})
    blob = stored_blob(srv, sha(data))
    os.chmod(blob, 0o644)
    corrupted = bytearray(blob.read_bytes())
    corrupted[5] ^= 1
    blob.write_bytes(bytes(corrupted))
    out = cohort(srv, "artifact", "get", f"{PROJECT}/bad", "--root", tmp_path / "dl")
    assert out.returncode != 0
    assert sha(data) in out.stderr and sha(bytes(corrupted)) in out.stderr
    assert "not kept" in out.stderr
    assert not (tmp_path / "dl" / "w.bin").exists()
    assert not (tmp_path / "dl" / "w.bin.part").exists()


def test_get_resumes_from_a_part_file(srv, entity, tmp_path):
    data = pattern(2 * PART + 9, "getresume")
    art_helpers.log_version(srv.api(), entity, PROJECT, "r", {"w.bin": data})
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "w.bin.part").write_bytes(data[:PART + 1])
    out = cohort(srv, "artifact", "get", f"{PROJECT}/r", "--root", tmp_path / "dl")
    assert out.returncode == 0, out.stderr
    assert tree(tmp_path / "dl") == {"w.bin": data}


@pytest.mark.parametrize("args,message", [
    (["show", "just-a-name"], "expected entity/project/name"),
    (["show", f"{PROJECT}/bad name"], "must be 1-128 characters"),
    (["show", f"{PROJECT}/missing:v3"], "missing"),
    (["put", "/nonexistent/file", "--name", "x", "--type", "model", "-p", PROJECT],
     "no such file"),
    (["put", "/etc/hostname", "--name", "x", "--type", "model", "-p", PROJECT, "--metadata",
      "[1]"], "--metadata: expected a JSON object"),
])
def test_bad_arguments_name_the_problem(srv, entity, args, message):
    out = cohort(srv, "artifact", *args)
    assert out.returncode != 0
    assert message in out.stderr, out.stderr


def test_put_rides_out_a_server_killed_and_restarted_in_the_middle(tmp_path):
    """The CLI's parts go through the agent's part pool; a server killed mid-upload makes them
    fail, and the CLI asks the restarted server what it has and sends the rest."""
    import signal
    from urllib.parse import urlparse

    home = tmp_path / "home"
    first = ServerProcess(home).start()
    restarted = None
    try:
        port = urlparse(first.url).port
        data = os.urandom(48 * PART + 99)
        (tmp_path / "big.bin").write_bytes(data)
        env = {k: v for k, v in first.env.items() if k not in ("COHORT_BASE_URL", "COHORT_API_KEY")}
        put = subprocess.Popen([str(COHORT_BIN), "artifact", "put", str(tmp_path / "big.bin"),
                                "--name", "big", "--type", "model", "-p", PROJECT],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        uploads = first.data_dir / "blobs" / "uploads"
        deadline = time.monotonic() + 60
        while len(list(uploads.glob("*/part-*"))) < 6 and time.monotonic() < deadline:
            assert put.poll() is None, put.communicate()
            time.sleep(0.005)
        first.stop(signal.SIGKILL)  # six parts stored or more, dozens to come
        restarted = ServerProcess(home, port=port).start()
        out, err = put.communicate(timeout=120)
        assert put.returncode == 0, err
        api = restarted.api()
        status, me = api.get("/api/v1/viewer")
        status, v = api.get(f"/api/v1/artifacts/{me['entity']}/{PROJECT}/big/latest")
        assert status == 200 and v["files"][0]["sha256"] == sha(data), v
        # What the first server stored is not sent again ("sent" counts the parts answered 200:
        # the file's size, not more, unless some were sent twice).
        assert sent_mib(err) <= round(len(data) / 2**20, 1), err
    finally:
        first.stop()
        if restarted:
            restarted.stop()
