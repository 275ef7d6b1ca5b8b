"""What the real agent uploads (docs/formats.md, "Batch v4"): the batch v4 bytes the client
library encoded, as they are in the WAL, with the seq in the Cohort-Batch-Seq header; every point
exactly once. A server that does not read batch v4 (415) gets a clear warning in the agent's log;
the records are kept and sent again once the server reads them. The training process is
examples/cpp/train.cc; the agent is the real one. The 415 case uses a small fake server in this
file (a real `cohort server` reads batch v4, so it cannot show it); it decodes the bodies with a
decoder written from the format's documentation.
"""
import json
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from test_client_agent import Client, keys, run_id_of, run_info, user_points
from conftest import wait_for

BINARY = "application/vnd.cohort.batch"


def agent_log(home):
    logs = list(home.rglob("agent.log"))
    return "".join(p.read_text(errors="replace") for p in logs)


def test_agent_uploads_every_point_once_as_batch_v2(server):
    c = Client(server.home)
    try:
        api = server.api()
        r = c.train("--steps", "2000", "--keys", "10")
        assert r.returncode == 0, r.stderr
        run_id = run_id_of(r.stdout)
        assert wait_for(lambda: user_points(api, run_id) == 20000, timeout=30), keys(api, run_id)
        counts = keys(api, run_id)
        assert all(n == 2000 for (k, _), n in counts.items() if not k.startswith("system/"))
        assert wait_for(lambda: run_info(api, run_id)["state"] == "finished", timeout=10)
        assert "does not read" not in agent_log(c.home)
    finally:
        c.stop_agent()


def _varint(data, at):
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def history_points(body):
    """The number of history values in a batch v4 body (checks the magic and version)."""
    assert body[:4] == b"CBAT" and body[4] == 4, body[:12]
    at = 12
    nkeys, at = _varint(body, at)
    for _ in range(nkeys):
        n, at = _varint(body, at)
        at += n
    rows, at = _varint(body, at)
    points, prev = 0, 0
    for _ in range(rows):
        flags = body[at]
        at += 1
        if flags & 1:
            _, at = _varint(body, at)
        _, at = _varint(body, at)
        if not flags & 2:
            prev, at = _varint(body, at)
            for _ in range(prev):
                _, at = _varint(body, at)
        at += 8 * prev
        points += prev
    return points


class OldServer:
    """Just enough of the Cohort API for the agent's Sender, answering 415 to every batch until
    `upgrade()`; then it counts the history points of each seq once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.refused = 0
        self.points = {}
        self.content_types = set()
        self.upgraded = False
        self.finished = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/api/v1/viewer":
                    return self.answer(200, {"entity": "team", "role": "admin"})
                return self.answer(404, {"error": {"code": "not_found", "message": self.path}})

            def do_PATCH(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.answer(200, {})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                parts = self.path.split("/")
                if self.path.endswith("/batches"):
                    return self.batch(body)
                if self.path.endswith("/finish"):
                    fake.finished = True
                    return self.answer(200, {})
                if self.path.endswith("/writers"):
                    return self.answer(201, {"label": json.loads(body)["label"], "next_step": 0,
                                             "last_seq": 0})
                if len(parts) == 6:  # POST /api/v1/runs/{entity}/{project}: run upsert
                    run = json.loads(body)
                    return self.answer(201, {"id": run.get("id", "r1"), "name": "fake-run"})
                return self.answer(200, {})

            def batch(self, body):
                with fake.lock:
                    fake.content_types.add(self.headers.get("Content-Type", ""))
                    if not fake.upgraded:
                        fake.refused += 1
                        return self.answer(415, {"error": {
                            "code": "unsupported_media_type",
                            "message": "binary batch version 4 is not supported"}})
                    seq = int(self.headers["Cohort-Batch-Seq"])
                    points = history_points(body)
                    fake.points.setdefault(seq, points)
                    return self.answer(200, {"duplicate": False, "points": points,
                                             "next_step": 0})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def upgrade(self):
        with self.lock:
            self.upgraded = True

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_server_that_does_not_read_batch_v2_gets_a_clear_error_and_loses_nothing(tmp_path):
    with OldServer() as old:
        c = Client(tmp_path, COHORT_BASE_URL=old.url, COHORT_API_KEY="ck_" + "1" * 40,
                   COHORT_BACKOFF_MAX_S="0.5")
        try:
            p = c.start("--steps", "3000", "--keys", "10")
            assert wait_for(lambda: old.refused >= 2, timeout=30)
            time.sleep(1)
            assert not old.points  # nothing taken while the server refused the format
            log = agent_log(c.home)
            assert "the server does not read cohort-batch-v4" in log, log
            assert "records stay in the WAL" in log, log
            old.upgrade()
            assert p.wait(timeout=60) == 0, p.stderr.read()
            assert wait_for(lambda: old.finished, timeout=30)
            # Every point arrived once, as batch v4 (never another encoding).
            assert sum(old.points.values()) == 30000, (old.points, agent_log(c.home))
            assert old.content_types == {BINARY}, old.content_types
        finally:
            c.stop_agent()
