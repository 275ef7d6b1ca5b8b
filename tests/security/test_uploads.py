"""Uploaded run files (the W&B-compatible upload route): path traversal, odd names and huge
bodies are refused with a JSON error, and nothing is stored."""
import json
import urllib.parse

import pytest

from conftest import ServerProcess
from security_helpers import http

BAD_NAMES = [
    "..", "../x", "a/../../x", "a/..", "./x", "a/./b",   # traversal and dot segments
    "%2E%2E/x", "a/%2e%2e/%2e%2e/etc/passwd",              # encoded dots
    "%2Fetc%2Fpasswd", "/etc/passwd",                      # absolute
    "a%5C..%5Cb", "a%5Cb",                                 # backslashes
    "x%00y", "x%01y", "x%7F",                              # NUL and control characters
    "a//b", "dir/",                                        # empty segments
    "%FF%FE",                                              # not UTF-8
    "x" * 1025,                                            # too long
]


@pytest.fixture
def small(tmp_path):
    s = ServerProcess(tmp_path, ["--max-body-bytes", str(1 << 20)]).start()
    yield s
    s.stop()


def make_run(s):
    key = s.config["api_key"]
    e = http(s.url + "/api/v1/viewer", key=key)[1]["entity"]
    status, run, _ = http(s.url + f"/api/v1/runs/{e}/proj", "POST", {"id": "r1"}, key=key)
    assert status == 201
    return key, e


def files(s, key, e):
    return http(s.url + f"/api/v1/runs/{e}/proj/r1/files", key=key)[1]["files"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_upload_name_is_400_and_nothing_stored(small, name):
    key, e = make_run(small)
    status, body, _ = http(small.url + f"/files/{e}/proj/r1/upload/{name}", "PUT", raw=b"data",
                           key=key)
    assert status in (400, 404), (status, body)
    assert isinstance(body, dict) and "error" in body, body
    if status == 400:
        assert "name" in body["error"]["message"] or "path" in body["error"]["message"], body
    assert files(small, key, e) == []


def test_traversal_names_are_refused_by_the_name_check(small):
    """The dangerous cases reach the route and are refused by it (400), not by luck."""
    key, e = make_run(small)
    for name in ("../x", "a/%2e%2e/b", "%2Fetc%2Fpasswd", "a%5Cb", "x%00y", "%FF"):
        status, body, _ = http(small.url + f"/files/{e}/proj/r1/upload/{name}", "PUT",
                               raw=b"data", key=key)
        assert status == 400, (name, status, body)
        assert body["error"]["code"] == "invalid_argument" and "file name" in \
            body["error"]["message"], body


def test_good_names_with_directories_are_stored(small):
    key, e = make_run(small)
    for name in ("wandb-metadata.json", "media/images/img_0_abc.png", "code/src/train.py",
                 "weird name (1).txt", "..hidden", "a..b"):
        path = "/".join(urllib.parse.quote(p) for p in name.split("/"))
        status, body, _ = http(small.url + f"/files/{e}/proj/r1/upload/{path}", "PUT",
                               raw=b"ok", key=key)
        assert status == 200, (name, body)
    assert sorted(f["name"] for f in files(small, key, e)) == sorted(
        ["wandb-metadata.json", "media/images/img_0_abc.png", "code/src/train.py",
         "weird name (1).txt", "..hidden", "a..b"])


def test_an_empty_media_file_is_stored(small):
    """A vendor media file of 0 bytes (an empty html page) is stored as the empty blob; its
    upload put a part 0 of a blob that has no part, refused with 400."""
    key, e = make_run(small)
    status, body, _ = http(small.url + f"/files/{e}/proj/r1/upload/media/html/empty.html", "PUT",
                           raw=b"", key=key)
    assert status == 200, body
    (f,) = [f for f in files(small, key, e) if f["name"] == "media/html/empty.html"]
    assert f["size"] == 0, f


def test_huge_upload_is_413_and_nothing_stored(small):
    key, e = make_run(small)
    status, body, _ = http(small.url + f"/files/{e}/proj/r1/upload/big.bin", "PUT",
                           raw=b"x" * ((1 << 20) + 1), key=key)
    assert status == 413, (status, body)
    assert body["error"]["code"] == "payload_too_large"
    assert files(small, key, e) == []
    # At the limit it is stored.
    status, body, _ = http(small.url + f"/files/{e}/proj/r1/upload/big.bin", "PUT",
                           raw=b"x" * (1 << 19), key=key)
    assert status == 200 and body["size"] == 1 << 19


def test_create_run_files_refuses_bad_names(small):
    key, e = make_run(small)
    q = """mutation F($e: String!, $f: [String!]!) { createRunFiles(input: {entityName: $e,
           projectName: "proj", runName: "r1", files: $f}) { files { name uploadUrl } } }"""
    status, payload, _ = http(small.url + "/graphql", "POST", {"query": q, "variables": {
        "e": e, "f": ["../../etc/passwd"]}}, key=key, basic=True)
    assert status == 200 and payload.get("errors"), payload
    assert "file name" in json.dumps(payload["errors"])
    status, payload, _ = http(small.url + "/graphql", "POST", {"query": q, "variables": {
        "e": e, "f": ["media/ok.png"]}}, key=key, basic=True)
    assert "errors" not in payload, payload
    url = payload["data"]["createRunFiles"]["files"][0]["uploadUrl"]
    assert http(url, "PUT", raw=b"png")[0] == 200


def test_the_same_media_file_uploaded_at_once_many_times_is_stored_for_each(small):
    """The vendor's clients upload each media file of a step on its own connection; identical
    files (the same figure logged under several keys) share the entity's one upload of that
    blob. While one request writes or completes it, the others wait and find the blob held:
    every upload answers 200 and names the blob."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    key, e = make_run(small)
    png = b"\x89PNG\r\n\x1a\n" + os.urandom(600 << 10)

    def put(i):
        return http(small.url + f"/files/{e}/proj/r1/upload/media/images/fig_{i}.png", "PUT",
                    raw=png, key=key)[:2]
    for _ in range(3):
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(put, range(8)))
        assert [s for s, _ in answers] == [200] * 8, answers
    assert len([f for f in files(small, key, e) if f["name"].startswith("media/")]) == 8
