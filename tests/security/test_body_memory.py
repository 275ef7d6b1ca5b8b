"""Request bodies cannot make the server hold memory they did not send: a large body is read only
after its request was authenticated, its buffer grows as its bytes arrive, and the bodies in
flight are bounded all together (docs/reliability.md, "Request bodies")."""
import socket
import time

from conftest import ServerProcess
from security_helpers import http, rss_bytes

CONNECTIONS = 20
DECLARED = 32 << 20  # the default --max-body-bytes


def announce(url, key=None, body=b""):
    """A connection that sends the headers of a POST announcing DECLARED body bytes, then only
    `body`."""
    host, port = url.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = (f"POST /api/v1/runs/someone/proj HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {DECLARED}\r\n")
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def status_of(sock, timeout):
    """The status of the answer on `sock`, or None when none came within `timeout`."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(4096)
    except socket.timeout:
        return None
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None


def test_unauthenticated_large_bodies_are_refused_before_any_memory_is_held(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        pid = server.proc.pid
        http(server.url + "/healthz")
        before = rss_bytes(pid)
        socks = [announce(server.url) for _ in range(CONNECTIONS)]
        t0 = time.monotonic()
        statuses = [status_of(s, 5) for s in socks]
        took = time.monotonic() - t0
        grown = rss_bytes(pid) - before
        for s in socks:
            s.close()
        # 401 at once, not after the request timeout; 20 x 32 MiB announced, nothing held.
        assert statuses == [401] * CONNECTIONS, statuses
        assert took < 5, took
        assert grown < 16 << 20, f"RSS grew by {grown >> 20} MiB"
    finally:
        server.stop()


def test_authenticated_bodies_grow_as_they_arrive_and_are_bounded_in_flight(tmp_path):
    budget = 4 * DECLARED
    server = ServerProcess(tmp_path, ["--max-body-bytes-in-flight", str(budget)]).start()
    try:
        key = server.config["api_key"]
        pid = server.proc.pid
        http(server.url + "/healthz")
        before = rss_bytes(pid)
        socks = [announce(server.url, key, b"x" * 1000) for _ in range(CONNECTIONS)]
        statuses = [status_of(s, 2) for s in socks]
        # Four bodies fit the budget and wait for their bytes (no answer yet); the others are
        # told to come back.
        assert statuses.count(None) == 4, statuses
        assert statuses.count(503) == CONNECTIONS - 4, statuses
        grown = rss_bytes(pid) - before
        assert grown < 16 << 20, f"RSS grew by {grown >> 20} MiB for 20 KB received"
        status, metrics, _ = http(server.url + "/metrics")
        assert f"cohort_http_body_bytes_in_flight {budget}" in metrics
        for s in socks:
            s.close()
        # Closed connections give their share back: a body fits again.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            metrics = http(server.url + "/metrics")[1]
            if "cohort_http_body_bytes_in_flight 0" in metrics:
                break
            time.sleep(0.1)
        assert "cohort_http_body_bytes_in_flight 0" in metrics
        e = http(server.url + "/api/v1/viewer", key=key)[1]["entity"]
        big = b'{"name": "big", "config": {"blob": "' + b"y" * (200 << 10) + b'"}}'
        status, run, _ = http(server.url + f"/api/v1/runs/{e}/proj", "POST", raw=big, key=key)
        assert status == 201, run
    finally:
        server.stop()


def test_large_body_with_a_bad_key_is_refused_with_the_key_error(tmp_path):
    server = ServerProcess(tmp_path).start()
    try:
        s = announce(server.url, "ck_" + "0" * 40)
        s.settimeout(5)
        answer = s.recv(4096)
        s.close()
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
        assert b"invalid or revoked API key" in answer
    finally:
        server.stop()


def test_parts_streamed_into_the_local_store_reserve_a_piece_each_not_the_part(tmp_path):
    """The local blob store writes a part's bytes as they come: a part's PUT reserves one
    piece of its body from --max-body-bytes-in-flight (512 KiB with the connection's read chunk),
    not the 8 MiB part, so a budget below one part still takes parts, many at once."""
    import hashlib
    part = 8 << 20
    budget = 4 << 20
    server = ServerProcess(tmp_path, ["--max-body-bytes-in-flight", str(budget)]).start()
    try:
        key = server.config["api_key"]
        entity = http(server.url + "/api/v1/viewer", key=key)[1]["entity"]
        data = bytes(range(256)) * (part // 256) + b"tail"
        digest = hashlib.sha256(data).hexdigest()
        path = f"/api/v1/blobs/{entity}/{digest}/parts/0?size={len(data)}"
        host, port = server.url.split("//")[1].split(":")

        def start_put(body):
            sock = socket.create_connection((host, int(port)), timeout=10)
            sock.sendall((f"PUT {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
                          f"Content-Type: application/octet-stream\r\nContent-Length: {part}\r\n"
                          "\r\n").encode() + body)
            return sock

        socks = [start_put(data[:1000]) for _ in range(8)]
        statuses = [status_of(s, 1) for s in socks]
        assert statuses == [None] * 8, statuses  # all eight admitted, waiting for their bytes
        status, metrics, _ = http(server.url + "/metrics")
        in_flight = [l for l in metrics.splitlines() if l.startswith("cohort_http_body_bytes_in_flight ")]
        # Each: the store's piece and the connection's read chunk (256 KiB each).
        assert in_flight == [f"cohort_http_body_bytes_in_flight {8 * (512 << 10)}"], in_flight
        for s in socks:
            s.close()
        # A whole part goes through the same budget.
        done = start_put(data[:part])
        assert status_of(done, 30) == 200
        done.close()
    finally:
        server.stop()
