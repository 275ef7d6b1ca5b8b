"""Which batch body the real agent uploads (docs/formats.md, "Binary ingest batch"):
binary to a server that lists "cohort-batch-v1" in /healthz, JSON for good after a 415, JSON
again (same batch, at once) after a 400 to a binary body, JSON only to a server that does not
list the format. The training process is examples/cpp/train.cc; the agent is the real one.
The 415 / 400 / old-server cases use a small fake server in this file (a real `cohort server`
reads binary, so it cannot show the fallback).
"""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from test_client_agent import Client, keys, run_id_of, run_info, user_points
from conftest import wait_for

BINARY = "application/vnd.cohort.batch"


def agent_log(home):
    logs = list(home.rglob("agent.log"))
    return "".join(p.read_text(errors="replace") for p in logs)


def test_agent_uploads_binary_batches_to_a_server_that_reads_them(server):
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
        log = agent_log(c.home)
        assert "uploading batches as binary (cohort-batch-v1)" in log, log
        assert "sending JSON" not in log and "retrying it as JSON" not in log, log
    finally:
        c.stop_agent()


class FakeServer:
    """Just enough of the Cohort API for the agent's Sender; counts what each batch carried.
    mode: "415" (refuses binary batches), "400" (refuses the first binary batch as malformed),
    "old" (no ingest_formats in /healthz)."""

    def __init__(self, mode):
        self.mode = mode
        self.lock = threading.Lock()
        self.binary_attempts = 0
        self.json_seqs = set()
        self.json_points = 0
        self.binary_points_accepted = 0
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
                if self.path == "/healthz":
                    if fake.mode == "old":
                        return self.answer(200, {"status": "ok", "version": "0.0.9"})
                    return self.answer(200, {"status": "ok",
                                             "ingest_formats": ["json", "cohort-batch-v1"]})
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
                    if self.headers.get("Content-Type", "").startswith(BINARY):
                        fake.binary_attempts += 1
                        if fake.mode == "415":
                            return self.answer(415, {"error": {
                                "code": "unsupported_media_type",
                                "message": "binary batch version 1 is not supported"}})
                        if fake.mode == "400" and fake.binary_attempts == 1:
                            return self.answer(400, {"error": {
                                "code": "invalid_argument",
                                "message": "binary batch: bad checksum"}})
                        # "400" mode after the first: accept (count rows roughly is not
                        # possible without a decoder; the JSON retry carries the data checked).
                        fake.binary_points_accepted += 1
                        return self.answer(200, {"duplicate": False, "points": 0, "next_step": 0})
                    b = json.loads(body)
                    points = sum(len(r["values"]) for r in b.get("history", []))
                    if b["seq"] not in fake.json_seqs:
                        fake.json_seqs.add(b["seq"])
                        fake.json_points += points
                    return self.answer(200, {"duplicate": False, "points": points,
                                             "next_step": 0})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("mode", ["415", "old"])
def test_agent_sends_json_after_a_415_or_to_an_old_server(tmp_path, mode):
    with FakeServer(mode) as fake:
        c = Client(tmp_path, COHORT_BASE_URL=fake.url, COHORT_API_KEY="ck_" + "1" * 40)
        try:
            r = c.train("--steps", "3000", "--keys", "10")
            assert r.returncode == 0, r.stderr
            assert wait_for(lambda: fake.finished, timeout=30)
            # Every point arrived, as JSON; a 415 switched the agent to JSON for good.
            assert fake.json_points == 30000, (fake.json_points, agent_log(c.home))
            assert fake.binary_attempts == (1 if mode == "415" else 0)
            log = agent_log(c.home)
            if mode == "415":
                assert "refuses binary batches" in log, log
            else:
                assert "uploading batches as JSON" in log, log
        finally:
            c.stop_agent()


def test_agent_retries_a_binary_batch_refused_as_malformed_as_json(tmp_path):
    with FakeServer("400") as fake:
        c = Client(tmp_path, COHORT_BASE_URL=fake.url, COHORT_API_KEY="ck_" + "1" * 40)
        try:
            r = c.train("--steps", "10", "--keys", "10")
            assert r.returncode == 0, r.stderr
            assert wait_for(lambda: fake.finished, timeout=30)
            # The refused batch came again as JSON (its points are all there); later batches,
            # if any, went binary again.
            assert fake.binary_attempts >= 1
            assert fake.json_points == 100 or (fake.json_points > 0 and
                                               fake.binary_points_accepted > 0)
            assert len(fake.json_seqs) == 1, fake.json_seqs
            assert "retrying it as JSON" in agent_log(c.home)
        finally:
            c.stop_agent()
