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
