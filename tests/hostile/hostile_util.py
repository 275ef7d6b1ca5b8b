"""Helpers of the hostile-input tests: raw sockets to the real server, its RSS, its health."""
import json
import socket
import time
import urllib.parse

from conftest import ServerProcess


def start(tmp_path, *args):
    return ServerProcess(tmp_path, list(args)).start()


def address(server):
    u = urllib.parse.urlparse(server.url)
    return u.hostname, u.port


def rss_kb(server):
    """The server's resident set size (VmRSS) in KiB."""
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(server, timeout=10.0):
    s = socket.create_connection(address(server), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(sock, deadline_s=30.0):
    """Reads one HTTP response (status line, headers, Content-Length body).
    Returns (status, headers dict lower-cased, body bytes)."""
    end = time.monotonic() + deadline_s
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(0.01, end - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response: {data[:200]!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        sock.settimeout(max(0.01, end - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body[:length]


def exchange(server, raw, deadline_s=30.0):
    """Sends raw request bytes on a new connection and reads one response."""
    with connect(server) as s:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered early and closed: read what it said
        return read_response(s, deadline_s)


def json_error(body):
    payload = json.loads(body)
    assert "error" in payload and payload["error"]["message"], payload
    return payload["error"]


def assert_healthy(server, within_s=5.0):
    """The server still answers /healthz promptly."""
    assert server.proc.poll() is None, f"server exited with {server.proc.returncode}"
    t0 = time.monotonic()
    status, _, body = exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                               deadline_s=within_s)
    assert status == 200 and json.loads(body)["status"] == "ok"
    assert time.monotonic() - t0 < within_s


def metric(server, name):
    """A gauge or counter of /metrics (the first sample of that name)."""
    _, _, body = exchange(server, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def request(method, path, body=b"", key=None, headers=()):
    """Raw bytes of one HTTP/1.1 request with a Content-Length body."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    elif isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: x", "Connection: close",
             f"Content-Length: {len(body)}", "Content-Type: application/json"]
    if key:
        lines.append(f"Authorization: Bearer {key}")
    lines += list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
