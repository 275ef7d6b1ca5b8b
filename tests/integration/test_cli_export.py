"""`cohort runs export` against the real server: what the export does before it fetches (an
output it cannot write: checked while the server is stopped with SIGSTOP, so a request would
hang), after the key listing (keys and writers the run does not have: exit 2, nothing written)
and when it is stopped mid-export (SIGINT, SIGTERM while its request waits on the stopped server:
no FILE.part left). More exports in tests/readback/test_read_cli.py."""
import os
import signal
import subprocess
import time

import pytest

from conftest import COHORT_BIN


@pytest.fixture
def run(server, api):
    """A run of two writers logging `loss` and `acc`; its "project/run" argument."""
    status, me = api.get("/api/v1/viewer")
    assert status == 200, me
    base = f"/api/v1/runs/{me['entity']}/proj"
    status, made = api.post(base, {"name": "exp"})
    assert status in (200, 201), made
    path = f"{base}/{made['id']}"
    for label in ("rank_0", "rank_1"):
        status, w = api.post(path + "/writers", {"label": label})
        assert status in (200, 201), w
        rows = [{"step": s, "time": 1000 + s, "values": {"loss": s / 4, "acc": s}}
                for s in range(5)]
        status, body = api.post(f"{path}/writers/{label}/batches", {"seq": 1, "history": rows})
        assert status == 200, body
    return f"proj/{made['id']}"


def export(server, run, *args, timeout=60):
    return subprocess.run([str(COHORT_BIN), "runs", "export", run, *args], capture_output=True,
                          text=True, timeout=timeout, env=server.env)


class Stopped:
    """The server stopped (SIGSTOP) for the block: a request to it waits."""

    def __init__(self, server):
        self.pid = server.proc.pid

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)

    def __exit__(self, *exc):
        os.kill(self.pid, signal.SIGCONT)


@pytest.mark.parametrize("args, named, listed", [
    (["--keys", "los"], "'los'", "acc, loss"),
    (["--keys", "loss,acc5,nope"], "'acc5', 'nope'", "acc, loss"),
    (["--writers", "rank_9"], "'rank_9'", "rank_0, rank_1"),
])
def test_a_key_or_writer_the_run_does_not_have_is_exit_2_naming_it(server, run, tmp_path, args,
                                                                    named, listed):
    out = tmp_path / "t.csv"
    r = export(server, run, *args, "-o", str(out))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert named in r.stderr and listed in r.stderr, r.stderr
    assert not out.exists() and not (tmp_path / "t.csv.part").exists()


def test_a_directory_as_output_fails_before_anything_is_fetched(server, run, tmp_path):
    adir = tmp_path / "adir"
    adir.mkdir()
    with Stopped(server):  # a request would wait: the checks come first
        r = export(server, run, "-o", str(adir), timeout=20)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert f"cannot write {adir}: Is a directory" in r.stderr, r.stderr
        assert list(adir.iterdir()) == [] and not (tmp_path / "adir.part").exists()
        r = export(server, run, "-o", str(tmp_path / "nosuch" / "t.csv"), timeout=20)
        assert r.returncode == 1 and "No such file or directory" in r.stderr, r.stderr


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_export_leaves_no_part_file(server, run, tmp_path, sig, code):
    out = tmp_path / "t.csv"
    part = tmp_path / "t.csv.part"
    with Stopped(server):
        proc = subprocess.Popen([str(COHORT_BIN), "runs", "export", run, "-o", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server.env)
        try:
            deadline = time.time() + 30
            while not part.exists():  # opened, then its first request waits on the server
                assert time.time() < deadline and proc.poll() is None, proc.poll()
                time.sleep(0.05)
            time.sleep(0.3)
            proc.send_signal(sig)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == code, (proc.returncode, proc.stderr.read())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t.csv")) == []


def test_an_export_writes_the_rows_and_no_part_file(server, run, tmp_path):
    """The export's order (output opened first, then the listing, checks, pages) end to end."""
    out = tmp_path / "out.csv"
    r = export(server, run, "-k", "loss", "-w", "rank_1", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines() == ["writer,step,time,loss"] + [
        f"rank_1,{s},{1000 + s},{s / 4:g}" for s in range(5)]
    assert not (tmp_path / "out.csv.part").exists()
