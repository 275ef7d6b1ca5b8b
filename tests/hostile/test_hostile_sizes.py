"""Oversized headers (431), bodies (413, declared or streamed) and huge names and labels (4xx):
each answered with a JSON error, nothing stored, memory bounded, the server still up."""
import json
import time

from hostile_util import (assert_healthy, connect, exchange, json_error, read_response, request,
                          rss_kb, start)


def key_and_entity(server):
    key = server.config["api_key"]
    status, _, body = exchange(server, request("GET", "/api/v1/viewer", key=key))
    assert status == 200
    return key, json.loads(body)["entity"]


def test_oversized_header_is_431(tmp_path):
    server = start(tmp_path, "--max-header-bytes", "8192")
    try:
        rss_before = rss_kb(server)
        one_big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"
        many = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(
            b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n"
        long_target = b"GET /healthz?" + b"q" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        for raw in (one_big, many, long_target):
            for _ in range(20):
                status, headers, body = exchange(server, raw)
                assert status == 431, status
                assert json_error(body)["code"] == "header_too_large"
        # Just under the limit is fine.
        ok = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 7000 + b"\r\n\r\n"
        assert exchange(server, ok)[0] == 200
        assert rss_kb(server) - rss_before < 64 * 1024
        assert_healthy(server)
    finally:
        server.stop()


def test_declared_oversized_body_is_413_before_it_is_sent(tmp_path):
    server = start(tmp_path, "--max-body-bytes", "1048576")
    try:
        key, entity = key_and_entity(server)
        with connect(server) as s:
            t0 = time.monotonic()
            s.sendall(f"POST /api/v1/runs/{entity}/p HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {key}\r\nContent-Length: 10000000000\r\n\r\n".encode())
            status, _, body = read_response(s, deadline_s=10)
            assert status == 413 and json_error(body)["code"] == "payload_too_large"
            assert time.monotonic() - t0 < 5
        assert_healthy(server)
    finally:
        server.stop()


def test_streamed_oversized_chunked_body_is_413_with_bounded_memory(tmp_path):
    server = start(tmp_path, "--max-body-bytes", "1048576")
    try:
        key, entity = key_and_entity(server)
        rss_before = rss_kb(server)
        with connect(server) as s:
            s.sendall(f"POST /api/v1/runs/{entity}/p HTTP/1.1\r\nHost: x\r\n"
                      f"Authorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
            chunk = b"%x\r\n" % 65536 + b"x" * 65536 + b"\r\n"
            sent = 0
            try:
                while sent < 64 << 20:  # 64 MiB offered against a 1 MiB limit
                    s.sendall(chunk)
                    sent += 65536
            except (BrokenPipeError, ConnectionResetError):
                pass
            status, _, body = read_response(s, deadline_s=10)
            assert status == 413 and json_error(body)["code"] == "payload_too_large"
            assert sent < 64 << 20, "the server kept reading a body over its limit"
        assert rss_kb(server) - rss_before < 64 * 1024
        status, _, body = exchange(server, request("GET", f"/api/v1/runs/{entity}/p", key=key))
        assert status == 200 and json.loads(body)["runs"] == []  # nothing was stored
        assert_healthy(server)
    finally:
        server.stop()


def test_huge_names_and_labels_are_4xx_and_nothing_is_stored(tmp_path):
    server = start(tmp_path)
    try:
        key, entity = key_and_entity(server)
        runs = f"/api/v1/runs/{entity}/p"
        status, _, body = exchange(server, request("POST", runs, {"id": "r1"}, key=key))
        assert status == 201, body
        huge = "x" * (1 << 20)
        cases = [
            ("POST", f"/api/v1/runs/{entity}/{'p' * 5000}", {"id": "r2"}),
            ("POST", runs, {"id": "i" * 5000}),
            ("POST", runs, {"id": "r3", "name": huge}),
            ("POST", runs, {"id": "r3", "group": huge}),
            ("POST", runs, {"id": "r3", "job_type": huge}),
            ("POST", runs, {"id": "r3", "tags": [huge]}),
            ("POST", runs, {"id": "r3", "tags": [f"t{i}" for i in range(100000)]}),
            ("POST", runs, {"id": "r3", "host": huge}),
            ("POST", f"{runs}/r1/writers", {"label": "l" * 10000}),
            ("PATCH", f"{runs}/r1", {"name": huge}),
            ("PATCH", f"{runs}/r1", {"notes": "n" * (8 << 20)}),
            ("POST", f"/api/v1/views/{entity}/p", {"name": huge, "spec": {}}),
            ("POST", "/api/v1/keys", {"name": huge, "role": "member"}),
        ]
        for method, path, payload in cases:
            status, _, body = exchange(server, request(method, path, payload, key=key))
            assert 400 <= status < 500, (method, path[:80], status, body[:200])
            json_error(body)
        # A huge writer label in a path and a huge metric key in a batch.
        status, _, body = exchange(server, request("POST", f"{runs}/r1/writers", {"label": "w"},
                                                   key=key))
        assert status == 201, body
        status, _, body = exchange(server, request(
            "POST", f"{runs}/r1/writers/{'w' * 5000}/batches",
            {"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1}}]}, key=key))
        assert 400 <= status < 500, status
        status, _, body = exchange(server, request(
            "POST", f"{runs}/r1/writers/w/batches",
            {"seq": 1, "history": [{"step": 0, "time": 1, "values": {"k" * 300: 1}}]}, key=key))
        assert status == 400 and "key longer than" in json_error(body)["message"]
        # Nothing of the refused requests was stored.
        status, _, body = exchange(server, request("GET", runs, key=key))
        listed = json.loads(body)["runs"]
        assert [r["id"] for r in listed] == ["r1"], [r["id"][:20] for r in listed]
        assert len(listed[0]["name"]) < 1000 and listed[0]["notes"] == ""
        status, _, body = exchange(server, request("GET", f"{runs}/r1/keys", key=key))
        assert json.loads(body)["keys"] == []
        assert_healthy(server)
    finally:
        server.stop()
