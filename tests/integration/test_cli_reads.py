"""The real `cohort` binary's read commands against a real server whose runs and alerts are
written through the HTTP API (no SDK needed): `logs --follow` across a server restart, and
`alerts ls` / `runs ls` across projects."""
import subprocess
import threading
import time
from urllib.parse import urlparse

from conftest import COHORT_BIN, ServerProcess


def cli_env(server):
    """The server's HOME (its config.json holds URL and key)."""
    return {k: v for k, v in server.env.items() if k not in ("COHORT_BASE_URL", "COHORT_API_KEY")}


def cohort(server, *args, timeout=60):
    return subprocess.run([str(COHORT_BIN), *args], env=cli_env(server), capture_output=True,
                          text=True, timeout=timeout)


def entity(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200, me
    return me["entity"]


def make_run(api, project, run_id, label="main"):
    base = f"/api/v1/runs/{entity(api)}/{project}"
    status, run = api.post(base, {"id": run_id})
    assert status in (200, 201), run
    status, w = api.post(f"{base}/{run_id}/writers", {"label": label})
    assert status in (200, 201), w
    return f"{base}/{run_id}/writers/{label}/batches"


def log_lines(api, batches, seq, texts):
    status, body = api.post(batches, {"seq": seq, "console": [
        {"time": 1700000000000 + seq, "stream": "stdout", "text": t} for t in texts]})
    assert status == 200, body


class LineReader:
    """Reads a process's stdout lines on a thread (readline() with a deadline)."""

    def __init__(self, stream):
        self.lines = []
        self._cv = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()

    def wait_for(self, text, timeout=60):
        with self._cv:
            self._cv.wait_for(lambda: text in self.lines, timeout=timeout)
            return text in self.lines


def test_logs_follow_rides_out_a_server_restart(tmp_path):
    """A poll that finds the server down is retried with backoff (said once on stderr, and
    when it is back): lines logged after the restart still appear, the follow goes on."""
    home = tmp_path / "home"
    first = ServerProcess(home).start()
    restarted = follow = None
    try:
        port = urlparse(first.url).port
        api = first.api()
        batches = make_run(api, "logs", "live1")
        log_lines(api, batches, 1, ["before 1", "before 2"])
        follow = subprocess.Popen([str(COHORT_BIN), "logs", "logs/live1", "--follow",
                                   "--interval", "0.1"], env=cli_env(first),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = LineReader(follow.stdout)
        assert out.wait_for("before 2"), out.lines
        first.stop()
        time.sleep(1.5)  # several polls fail
        assert follow.poll() is None, follow.stderr.read()
        restarted = ServerProcess(home, port=port).start()
        api = restarted.api()
        log_lines(api, batches, 2, ["after 1"])
        assert out.wait_for("after 1"), out.lines
        assert follow.poll() is None  # still following the running run
        log_lines(api, batches, 3, ["after 2"])
        assert out.wait_for("after 2"), out.lines
        assert out.lines == ["before 1", "before 2", "after 1", "after 2"]
        follow.terminate()
        err = follow.stderr.read()
        follow.wait(timeout=10)
        assert err.count("server unreachable, retrying...") == 1, err
        assert err.count("server reachable again") == 1, err
    finally:
        if follow and follow.poll() is None:
            follow.kill()
            follow.wait()
        first.stop()
        if restarted:
            restarted.stop()


def test_logs_follow_ends_on_a_run_that_is_gone(server):
    """401 / 403 / 404 are not retried: a follow of a run that does not exist ends at once."""
    out = cohort(server, "logs", "logs/nosuch", "--follow", timeout=30)
    assert out.returncode == 1 and "nosuch" in out.stderr, out.stderr

