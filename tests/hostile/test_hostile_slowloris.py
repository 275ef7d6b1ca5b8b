"""Slow and idle clients (slowloris): the server cuts them off after --request-timeout /
--idle-timeout and keeps serving everyone else meanwhile, with bounded memory."""
import resource
import select
import socket
import time

from hostile_util import address, assert_healthy, connect, exchange, metric, rss_kb, start

SLOW = 200  # hostile connections per test


def raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def closed_by_peer(sock):
    """True when the server has closed (or reset) this connection."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            return sock.recv(4096) == b""  # an answer would be data; we expect none
    except (ConnectionResetError, BrokenPipeError):
        return True
    return False


def test_slowloris_headers_are_cut_off_while_others_are_served(tmp_path):
    raise_fd_limit(4 * SLOW)
    server = start(tmp_path, "--request-timeout", "2", "--idle-timeout", "2")
    try:
        rss_before = rss_kb(server)
        slow = []
        for _ in range(SLOW):
            s = socket.create_connection(address(server), timeout=5)
            s.setblocking(False)
            s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(s)
        assert metric(server, "cohort_http_connections_open") >= SLOW

        # Trickle one header byte per connection every 100 ms; meanwhile a normal client must be
        # answered promptly, and every slow connection must be closed by the server.
        start_t = time.monotonic()
        open_slow = set(range(SLOW))
        served, worst = 0, 0.0
        while open_slow and time.monotonic() - start_t < 15:
            for i in list(open_slow):
                try:
                    slow[i].send(b"a")
                except (BrokenPipeError, ConnectionResetError, BlockingIOError):
                    pass
                if closed_by_peer(slow[i]):
                    open_slow.discard(i)
            t0 = time.monotonic()
            assert_healthy(server, within_s=3)
            worst = max(worst, time.monotonic() - t0)
            served += 1
            time.sleep(0.1)
        elapsed = time.monotonic() - start_t
        assert not open_slow, f"{len(open_slow)} slow connections still open after {elapsed:.1f}s"
        assert elapsed >= 1.5, "slow connections were closed before the request timeout"
        assert served >= 5 and worst < 3
        for s in slow:
            s.close()
        deadline = time.monotonic() + 5
        while metric(server, "cohort_http_connections_open") > 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert metric(server, "cohort_http_connections_open") <= 2
        assert rss_kb(server) - rss_before < 64 * 1024, (rss_before, rss_kb(server))
        assert_healthy(server)
    finally:
        server.stop()


def test_silent_and_idle_keepalive_connections_are_closed(tmp_path):
    raise_fd_limit(4 * SLOW)
    server = start(tmp_path, "--request-timeout", "2", "--idle-timeout", "2")
    try:
        silent = [connect(server) for _ in range(SLOW // 2)]  # never send a byte
        idle = []
        for _ in range(SLOW // 2):  # one request, then nothing: keep-alive idle
            s = connect(server)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(10)
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
            idle.append(s)
        t0 = time.monotonic()
        open_socks = set(silent + idle)
        while open_socks and time.monotonic() - t0 < 12:
            for s in list(open_socks):
                if closed_by_peer(s):
                    open_socks.discard(s)
            time.sleep(0.05)
        assert not open_socks, f"{len(open_socks)} idle connections still open"
        assert time.monotonic() - t0 >= 1.0
        for s in silent + idle:
            s.close()
        assert_healthy(server)
    finally:
        server.stop()


def test_request_timeout_also_bounds_a_slow_body(tmp_path):
    server = start(tmp_path, "--request-timeout", "2")
    try:
        with connect(server) as s:
            s.sendall(b"POST /api/v1/runs/e/p HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            t0 = time.monotonic()
            s.settimeout(10)
            closed = False
            while time.monotonic() - t0 < 10:
                try:
                    s.send(b" ")
                    if s.recv(65536) == b"":
                        closed = True
                        break
                except socket.timeout:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
            assert closed and 1.5 <= time.monotonic() - t0 < 10
        assert_healthy(server)
    finally:
        server.stop()
