"""`cohort runs export` against a stand-in server that answers the key listing and holds every
history request open: what the export does before it fetches (an output it cannot write), after
the listing (keys and writers the run does not have) and when it is stopped mid-export (SIGINT,
SIGTERM: no FILE.part left). The exports that succeed are in tests/readback/test_read_cli.py."""
import http.server
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import COHORT_BIN

RUN = "ent/proj/run1"
KEYS = [{"key": k, "writer": w, "count": 10, "type": "scalar"}
        for k in ("acc", "loss") for w in ("rank_0", "rank_1")]
KEYS += [{"key": "samples", "writer": "rank_0", "count": 1, "type": "image"},
         {"key": "system/cpu", "writer": "rank_0", "count": 5, "type": "scalar"}]


class StandIn:
    def __init__(self):
        self.requests = []
        self.history_asked = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                if self.path.split("?")[0].endswith("/keys"):
                    body = json.dumps({"keys": KEYS}).encode()
                    self.send_response(200)
                else:  # history: held until the test ends
                    outer.history_asked.set()
                    outer.release.wait(60)
                    body = b'{"error":{"message":"gone"}}'
                    self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stand_in():
    s = StandIn()
    yield s
    s.close()


def env_for(stand_in, tmp_path):
    return dict(os.environ, HOME=str(tmp_path), COHORT_BASE_URL=stand_in.url,
                COHORT_API_KEY="ck_" + "0" * 40)


def export(stand_in, tmp_path, *args):
    return subprocess.run([str(COHORT_BIN), "runs", "export", RUN, *args], capture_output=True,
                          text=True, timeout=60, env=env_for(stand_in, tmp_path))


@pytest.mark.parametrize("args, named, listed", [
    (["--keys", "los"], "'los'", "acc, loss"),
    (["--keys", "loss,acc5,samples"], "'acc5', 'samples'", "acc, loss"),  # an image: no column
    (["--writers", "rank_9"], "'rank_9'", "rank_0, rank_1"),
])
def test_a_key_or_writer_the_run_does_not_have_is_exit_2_naming_it(stand_in, tmp_path, args,
                                                                    named, listed):
    out = tmp_path / "t.csv"
    r = export(stand_in, tmp_path, *args, "-o", str(out))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert named in r.stderr and listed in r.stderr, r.stderr
    assert "system/cpu" not in r.stderr, r.stderr  # the run's own keys are listed, not system's
    assert not out.exists() and not (tmp_path / "t.csv.part").exists()
    assert not any("/history" in p for p in stand_in.requests), stand_in.requests


def test_a_directory_as_output_fails_before_anything_is_fetched(stand_in, tmp_path):
    adir = tmp_path / "adir"
    adir.mkdir()
    r = export(stand_in, tmp_path, "-o", str(adir))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"cannot write {adir}: Is a directory" in r.stderr, r.stderr
    assert stand_in.requests == []
    assert list(adir.iterdir()) == [] and not (tmp_path / "adir.part").exists()

    r = export(stand_in, tmp_path, "-o", str(tmp_path / "nosuch" / "t.csv"))
    assert r.returncode == 1 and "No such file or directory" in r.stderr, r.stderr
    assert stand_in.requests == []


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_export_leaves_no_part_file(stand_in, tmp_path, sig, code):
    out = tmp_path / "t.csv"
    proc = subprocess.Popen([str(COHORT_BIN), "runs", "export", RUN, "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env_for(stand_in, tmp_path))
    try:
        assert stand_in.history_asked.wait(30), stand_in.requests
        assert (tmp_path / "t.csv.part").exists()  # the export is under way
        time.sleep(0.2)
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, (proc.returncode, proc.stderr.read())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t.csv")) == []


def test_an_export_from_a_real_server_writes_the_rows_and_no_part_file(server, api, tmp_path):
    """The export's order (output opened first, then the listing, checks, pages) end to end."""
    status, me = api.get("/api/v1/viewer")
    assert status == 200, me
    base = f"/api/v1/runs/{me['entity']}/proj"
    status, run = api.post(base, {"name": "exp"})
    assert status in (200, 201), run
    path = f"{base}/{run['id']}"
    for label in ("rank_0", "rank_1"):
        status, w = api.post(path + "/writers", {"label": label})
        assert status in (200, 201), w
        rows = [{"step": s, "time": 1000 + s, "values": {"loss": s / 4, "acc": s}}
                for s in range(5)]
        status, body = api.post(f"{path}/writers/{label}/batches", {"seq": 1, "history": rows})
        assert status == 200, body
    env = dict(server.env)
    out = tmp_path / "out.csv"
    r = subprocess.run([str(COHORT_BIN), "runs", "export", f"proj/{run['id']}", "-k", "loss",
                        "-w", "rank_1", "-o", str(out)], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines() == ["writer,step,time,loss"] + [
        f"rank_1,{s},{1000 + s},{s / 4:g}" for s in range(5)]
    assert not (tmp_path / "out.csv.part").exists()
    r = subprocess.run([str(COHORT_BIN), "runs", "export", f"proj/{run['id']}", "-k", "los",
                        "-o", str(out)], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "'los'" in r.stderr and "acc, loss" in r.stderr, r.stderr
