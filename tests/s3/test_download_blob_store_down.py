"""A streamed download (over 1 MiB) reads its first bytes before it answers: a blob missing from
the bucket is answered 404 "blob ... is not stored", and a bucket that does not answer (the real
SeaweedFS `weed` stopped) 503 with Retry-After, where the server answered 200 with the file's
Content-Length and then cut the connection. Skipped, saying why, when weed is not built
(scripts/build-weed.sh)."""
import hashlib
import http.client
import json
import os
import pathlib
import subprocess
import sys
import urllib.parse
import urllib.request

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import weed as weed_mod  # noqa: E402
from conftest import COHORT_BIN, ServerProcess, byte_pattern  # noqa: E402

BUCKET = "cohort-down"


@pytest.fixture
def weed():
    if not weed_mod.weed_binary():
        pytest.skip(weed_mod.why_no_weed())
    with weed_mod.Weed() as w:
        yield w


def raw_get(server, key, path):
    """(status, headers, body) of GET `path`; the body as far as it came."""
    u = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    conn.request("GET", path, headers={"Authorization": "Bearer " + key})
    resp = conn.getresponse()
    try:
        body = resp.read()
    except http.client.IncompleteRead as e:
        body = e.partial
    conn.close()
    return resp.status, dict(resp.getheaders()), body


def put_artifact(server, key, tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    env = dict(server.env, COHORT_BASE_URL=server.url, COHORT_API_KEY=key,
               COHORT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([str(COHORT_BIN), "artifact", "put", str(tmp_path / name), "--name", name,
                        "--type", "model", "-p", "proj"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    status, v = server.api(key).get(f"/api/v1/artifacts/{entity_of(server, key)}/proj/{name}"
                                    "/latest")
    assert status == 200, v
    return v["files"][0]["url"]


def entity_of(server, key):
    return server.api(key).get("/api/v1/viewer")[1]["entity"]


def test_a_large_download_answers_the_blob_stores_error_not_a_cut_200(weed, tmp_path):
    server = ServerProcess(tmp_path / "s", env=weed.s3_env(BUCKET)).start()
    try:
        key = server.config["api_key"]
        missing = byte_pattern(3 << 20, "missing")
        kept = byte_pattern(3 << 20, "kept")
        url_missing = put_artifact(server, key, tmp_path, "missing", missing)
        url_kept = put_artifact(server, key, tmp_path, "kept", kept)
        status, _, body = raw_get(server, key, url_kept)
        assert status == 200 and body == kept

        # The blob's object deleted from the bucket behind the server's back.
        sha = hashlib.sha256(missing).hexdigest()
        req = urllib.request.Request(weed.url(BUCKET, f"sha256/{sha[:2]}/{sha}", "DELETE"),
                                     method="DELETE")
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status in (200, 204)
        status, _, body = raw_get(server, key, url_missing)
        assert status == 404, (status, body[:200])
        assert f"blob {sha} is not stored" in json.loads(body)["error"]["message"], body

        # The bucket does not answer.
        weed.stop()
        status, headers, body = raw_get(server, key, url_kept)
        assert status == 503, (status, len(body))
        assert headers.get("Retry-After"), headers
        assert json.loads(body)["error"]["message"], body
    finally:
        server.stop()
