"""The real `cohort` binary's read commands against a real server whose runs and alerts are
written through the HTTP API (no SDK needed): `logs --follow` across a server restart, and
`alerts ls` / `runs ls` across projects."""
import json
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
    when it is back): lines logged after the restart still appear, the follow goes on. (It
    exited 1 on the first failed poll.)"""
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
        assert err.count("; retrying...") == 1 and "cannot reach the server" in err, err
        assert err.count("the server answers again") == 1, err
        # 401 / 403 / 404 are not retried: a follow of a run that does not exist ends at once.
        gone = cohort(restarted, "logs", "logs/nosuch", "--follow", timeout=30)
        assert gone.returncode == 1 and "nosuch" in gone.stderr, gone.stderr
    finally:
        if follow and follow.poll() is None:
            follow.kill()
            follow.wait()
        first.stop()
        if restarted:
            restarted.stop()


def table(stdout):
    """Parses an aligned table: column starts from the header, cells cut at those offsets."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    header = lines[0]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    names = header.split()
    return [dict(zip(names, [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]))
            for line in lines[1:]]


def test_alerts_ls_merges_projects_newest_first_and_says_what_the_limit_left_out(server, api):
    """Every project's alerts in one list by opened time (they came project by project), the
    limit applied to that list, and a note on stderr when it cut some."""
    hooks = {}
    for project in ("pa", "pb"):
        make_run(api, project, "r1")
        hooks[project] = f"/api/v1/runs/{entity(api)}/{project}/r1/writers/main/alerts"
    order = [("pa", "a1"), ("pb", "b1"), ("pa", "a2"), ("pb", "b2"), ("pa", "a3")]
    for project, title in order:
        status, body = api.post(hooks[project], {"title": title, "level": "WARN"})
        assert status in (200, 201), body
        time.sleep(0.01)  # distinct opened times
    newest_first = [title for _, title in reversed(order)]
    out = cohort(server, "alerts", "ls")
    assert out.returncode == 0, out.stderr
    assert [r["TITLE"] for r in table(out.stdout)] == newest_first
    assert "of" not in out.stderr, out.stderr  # nothing left out
    out = cohort(server, "alerts", "ls", "--limit", "3")
    assert out.returncode == 0, out.stderr
    rows = table(out.stdout)
    assert [(r["PROJECT"], r["TITLE"]) for r in rows] == [("pa", "a3"), ("pb", "b2"), ("pa", "a2")]
    assert "(3 of 5 alerts" in out.stderr, out.stderr
    out = cohort(server, "alerts", "ls", "--limit", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert [a["title"] for a in json.loads(out.stdout)] == ["a3", "b2"]
    assert "(2 of 5 alerts" in out.stderr, out.stderr


def test_runs_ls_merges_projects_in_the_sort_order_and_limits_the_whole_list(server, api):
    for project, run_id in (("pa", "r1"), ("pb", "r2"), ("pa", "r3"), ("pb", "r4")):
        make_run(api, project, run_id)
        time.sleep(0.01)  # distinct creation times
    out = cohort(server, "runs", "ls", "--limit", "3")
    assert out.returncode == 0, out.stderr
    assert [(r["PROJECT"], r["ID"]) for r in table(out.stdout)] == [
        ("pb", "r4"), ("pa", "r3"), ("pb", "r2")]
    assert "(3 of 4 runs" in out.stderr, out.stderr
    out = cohort(server, "runs", "ls", "--sort", "created")
    assert [r["ID"] for r in table(out.stdout)] == ["r1", "r2", "r3", "r4"]
