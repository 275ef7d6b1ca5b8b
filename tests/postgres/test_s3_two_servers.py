"""Two `cohort server` processes on one PostgreSQL database sharing one S3 bucket (a real
SeaweedFS `weed` started here; docs/operations.md, "Object storage (S3-compatible)"): the parts
of one blob uploaded alternately through both servers, the version committed through one and
downloaded byte-exact through the other, `cohort gc --apply` removing an unreferenced blob from
the bucket, and a server with bad credentials or two blob stores refusing to start with an error
that names the problem.

Skipped, saying why, when weed is not built (scripts/build-weed.sh)."""
import hashlib
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

_S3 = pathlib.Path(__file__).resolve().parent.parent / "s3"
if str(_S3) not in sys.path:
    sys.path.insert(0, str(_S3))

import weed as weed_mod  # noqa: E402
from conftest import COHORT_BIN, ServerProcess  # noqa: E402
from .pg_servers import (clients, data_of, entity_of, fresh_db, put_part,  # noqa: E402
                         server_on, server_pair)

PART = 8 << 20
BUCKET = "cohort-shared"
PREFIX = "team/"


@pytest.fixture(scope="module")
def weed():
    if not weed_mod.weed_binary():
        print(f"SKIPPED the S3 tests: {weed_mod.why_no_weed()}")
        pytest.skip(weed_mod.why_no_weed())
    with weed_mod.Weed() as w:
        yield w


@pytest.fixture
def servers(cluster, weed, tmp_path):
    with server_pair(cluster, tmp_path, "s3", env=weed.s3_env(BUCKET, PREFIX)) as pair:
        yield pair


def raw_get(api, path):
    req = urllib.request.Request(api.url + path)
    req.add_header("Authorization", "Bearer " + api.key)
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.read()


def put_part_of(api, entity, data, n):
    """Part `n` of the blob `data`."""
    put_part(api, entity, hashlib.sha256(data).hexdigest(), len(data), n,
             data[n * PART:(n + 1) * PART])


def blob_key(sha):
    return f"{PREFIX}sha256/{sha[:2]}/{sha}"


def test_parts_through_both_servers_commit_on_one_download_from_the_other_and_gc(servers, weed):
    url, a, b = servers
    api_a, api_b = clients(a, b)
    entity = entity_of(api_b)

    data = data_of(2 * PART + 777, "two-servers")
    sha, size = hashlib.sha256(data).hexdigest(), len(data)
    put_part_of(api_a, entity, data, 0)
    put_part_of(api_b, entity, data, 1)
    status, st = api_a.get(f"/api/v1/blobs/{entity}/{sha}?size={size}")
    assert status == 200 and st["parts"] == [0, 1] and not st["stored"], st
    put_part_of(api_a, entity, data, 2)
    status, st = api_b.get(f"/api/v1/blobs/{entity}/{sha}?size={size}")
    assert st["parts"] == [0, 1, 2], st
    # The entity's own upload (blob::OwnedUploadName), one object per part.
    upload = hashlib.sha256(f"cohort upload v1\n{entity}\n{sha}".encode()).hexdigest()
    assert weed.get(BUCKET, f"{PREFIX}uploads/{upload}-{size}/part-0") == data[:PART]
    status, done = api_b.post(f"/api/v1/blobs/{entity}/{sha}/complete", {"size": size})
    assert status == 200 and done["stored"], done
    # The blob is one object in the bucket, under the prefix; the parts are gone.
    assert weed.get(BUCKET, blob_key(sha)) == data
    assert weed.get(BUCKET, f"{PREFIX}uploads/{upload}-{size}/part-0") is None

    status, v = api_a.post(f"/api/v1/artifacts/{entity}/proj/model",
                           {"type": "model", "files": [{"path": "w.bin", "sha256": sha,
                                                        "size": size}]})
    assert status in (200, 201), v
    status, got = api_b.get(f"/api/v1/artifacts/{entity}/proj/model/latest")
    assert status == 200, got
    f = got["files"][0]
    assert raw_get(api_b, f["url"]) == data

    # An unreferenced blob (uploaded through B, never committed) goes with `cohort gc --apply`
    # run against the same store and bucket; the committed one stays.
    loose = data_of(5000, "loose")
    loose_sha = hashlib.sha256(loose).hexdigest()
    put_part_of(api_b, entity, loose, 0)
    status, done = api_a.post(f"/api/v1/blobs/{entity}/{loose_sha}/complete",
                              {"size": len(loose)})
    assert status == 200, done
    assert weed.get(BUCKET, blob_key(loose_sha)) == loose

    def gc(*args):
        r = subprocess.run([str(COHORT_BIN), "gc", "--store", url, "--grace-hours", "0", *args],
                           capture_output=True, text=True, timeout=120,
                           env=dict(a.env, **weed.s3_env(BUCKET, PREFIX)))
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert gc().startswith("would remove 1 blob record(s) no version references and up to 1 "
                           "file(s)")
    assert weed.get(BUCKET, blob_key(loose_sha)) == loose  # a dry run removes nothing
    out = gc("--apply")
    assert out.startswith("removed 1 blob record(s) no version references and 1 file(s)"), out
    assert weed.get(BUCKET, blob_key(loose_sha)) is None
    assert weed.get(BUCKET, blob_key(sha)) == data
    assert raw_get(api_a, f["url"]) == data


def test_a_cli_put_by_id_through_one_server_is_read_back_through_the_other(servers, weed,
                                                                          tmp_path):
    """`cohort artifact put` of a large file goes as an upload by id (hashed while its parts go:
    docs/artifacts.md, "Uploads by id"): its parts are objects of the bucket under the upload's
    own name until the completion checks them against the digest and publishes the blob, which
    the other server serves back byte-exact to `cohort artifact get`."""
    url, a, b = servers
    key = a.config["api_key"]
    data = data_of(9 * PART + 5, "put-by-id")
    (tmp_path / "w.bin").write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()

    def cli(server, *args):
        env = {k: v for k, v in server.env.items()}
        env.update(COHORT_BASE_URL=server.url, COHORT_API_KEY=key,
                   COHORT_CACHE_DIR=str(tmp_path / "cache"))
        r = subprocess.run([str(COHORT_BIN), "artifact", *map(str, args)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r

    put = cli(a, "put", tmp_path / "w.bin", "--name", "big", "--type", "model", "-p", "proj")
    assert "(72.0 MiB sent)" in put.stderr, put.stderr
    assert weed.get(BUCKET, blob_key(sha)) == data
    cli(b, "get", "proj/big", "--root", tmp_path / "dl")
    assert (tmp_path / "dl" / "w.bin").read_bytes() == data


def open_part_put(server, key, entity, sha, size, n, first):
    """A raw PUT of part `n` announcing its whole length, with only `first` of its bytes sent."""
    host, port = server.url.split("//", 1)[1].rstrip("/").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    length = min(PART, size - n * PART)
    sock.sendall((f"PUT /api/v1/blobs/{entity}/{sha}/parts/{n}?size={size} HTTP/1.1\r\n"
                  f"Host: {host}\r\nAuthorization: Bearer {key}\r\n"
                  f"Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n"
                  "\r\n").encode() + first)
    return sock


def answered(sock):
    """What the server has answered on `sock` so far (b"" if nothing yet)."""
    sock.setblocking(False)
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return b""
    finally:
        sock.settimeout(30)


def test_parts_go_on_to_the_bucket_as_they_come_and_a_cut_one_stores_nothing(cluster, weed,
                                                                             tmp_path):
    """With S3 the part route sends a part's bytes on to the bucket as they arrive (one PUT per
    part, streamed), so a part in flight holds one piece of its body, not 8 MiB: with 12 MiB of
    body memory in flight allowed, three parts are taken at once (a server that gathered each
    part reserved 8 MiB apiece and answered the second 503). A part whose body is cut midway
    stores nothing: not listed, no object in the bucket; sent again whole, the blob completes."""
    db = fresh_db(cluster, tmp_path, "s3")
    with server_on(tmp_path / "s", cluster.url(db, "pool_size=4"),
                   "--max-body-bytes-in-flight", str(12 << 20),
                   env=weed.s3_env(BUCKET, PREFIX)) as server:
        key = server.config["api_key"]
        api = server.api(key)
        entity = api.get("/api/v1/viewer")[1]["entity"]
        data = data_of(3 * PART + 4321, "streamed-parts")
        sha, size = hashlib.sha256(data).hexdigest(), len(data)
        upload = hashlib.sha256(f"cohort upload v1\n{entity}\n{sha}".encode()).hexdigest()
        half = PART // 2
        socks = [open_part_put(server, key, entity, sha, size, n, data[n * PART:n * PART + half])
                 for n in range(3)]
        time.sleep(1)  # a refusal is answered at once, before the body
        assert [answered(s) for s in socks] == [b"", b"", b""]
        for n in (0, 1):
            socks[n].sendall(data[n * PART + half:(n + 1) * PART])
        # Part 2 is cut midway: the client goes away.
        socks[2].close()
        for n in (0, 1):
            reply = b""
            while b"\r\n\r\n" not in reply:
                got = socks[n].recv(65536)
                assert got, f"part {n}: the server closed without an answer: {reply!r}"
                reply += got
            assert reply.startswith(b"HTTP/1.1 200"), reply
            socks[n].close()
        # The cut part's request ends at the server when it reads the early end of its body
        # (at once); after that nothing of it is in the bucket, now or later.
        time.sleep(1)
        status, st = api.get(f"/api/v1/blobs/{entity}/{sha}?size={size}")
        assert status == 200 and st["parts"] == [0, 1], st
        assert weed.get(BUCKET, f"{PREFIX}uploads/{upload}-{size}/part-2") is None
        assert weed.get(BUCKET, f"{PREFIX}uploads/{upload}-{size}/part-0") == data[:PART]
        for n in (2, 3):
            put_part_of(api, entity, data, n)
        status, done = api.post(f"/api/v1/blobs/{entity}/{sha}/complete", {"size": size})
        assert status == 200 and done["stored"], done
        assert weed.get(BUCKET, blob_key(sha)) == data


def refused_start(tmp_path, name, env, extra=()):
    """Starts `cohort server` expecting it to refuse; returns what it printed on stderr."""
    home = tmp_path / name
    r = subprocess.run([str(COHORT_BIN), "server", "--port", "0", "--data-dir", str(home / "data"),
                        *extra], capture_output=True, text=True, timeout=120,
                       env=dict(ServerProcess(home).env, **env))
    assert r.returncode != 0 and not r.stdout.startswith("http"), (r.stdout, r.stderr)
    return r.stderr


def test_bad_credentials_or_two_blob_stores_stop_the_server_with_a_clear_error(weed, tmp_path):
    env = weed.s3_env(BUCKET, PREFIX)
    env["COHORT_S3_SECRET_KEY"] = "wrong-secret-123"
    message = refused_start(tmp_path, "bad", env)
    assert "403" in message and "SignatureDoesNotMatch" in message, message
    assert "COHORT_S3_SECRET_KEY" in message, message
    assert "wrong-secret-123" not in message

    env = weed.s3_env(BUCKET, PREFIX)
    env["COHORT_S3_ACCESS_KEY"] = "nobody"
    message = refused_start(tmp_path, "nobody", env)
    assert "InvalidAccessKeyId" in message, message

    message = refused_start(tmp_path, "both", weed.s3_env(BUCKET),
                            ["--blob-dir", str(tmp_path / "blobs")])
    assert "--blob-dir and --blob-s3-endpoint" in message, message
