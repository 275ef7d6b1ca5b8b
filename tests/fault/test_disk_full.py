"""Disk full under the server's SQLite store and under the agent's WAL: a small tmpfs (8 MiB)
holds the directory, a filler file takes the free space while writers ingest, then goes.

Asserted: the server answers 503 with a JSON error that names the problem (and Retry-After), it
stays up, the agent backs off and retries, the clients are never blocked (their data waits in the
agent's WAL, or in memory when the WAL itself is full) and finish in bounded time; when space
returns every point arrives exactly once and the SQLite file passes `PRAGMA integrity_check`.

Needs permission to mount a tmpfs (root, as on the CI machine); elsewhere these tests skip and
say so. The in-process equivalents at the file layer are src/wal/fault_test.cc
(EnospcOnAppendIsUnavailableAndLeavesNothingHalfWritten, DiskFullForManyAppendsRecovers...).
"""
import json
import os
import sqlite3
import subprocess
import time
import urllib.request

import pytest

from fault_helpers import (FaultServer, Writers, assert_exactly_once, entity, http_status_count,
                           random_run_id, run_path, run_state, writer_states, PROJECT)
from conftest import wait_for


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(mnt, leave=0):
    """Takes all free space of `mnt` but `leave` bytes with a filler file; returns its path."""
    path = mnt / "filler"
    st = os.statvfs(mnt)
    free = st.f_bavail * st.f_frsize
    with open(path, "wb") as f:
        chunk = b"\0" * 65536
        left = max(0, free - leave)
        try:
            while left > 0:
                left -= f.write(chunk[:min(len(chunk), left)])
                f.flush()
        except OSError:
            pass
    return path


def post_batch(server, run_id, label, seq, step):
    api = server.api()
    url = f"{server.url}/api/v1/runs/{entity(api)}/{PROJECT}/{run_id}/writers/{label}/batches"
    body = json.dumps({"seq": seq, "history": [{"step": step, "time": 1, "values": {"x": 1.0}}]})
    req = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Authorization": "Bearer " + api.key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"null")


def test_store_disk_full_answers_503_and_recovers_when_space_returns(tmp_path, small_disk):
    server = FaultServer(tmp_path)
    server.data_dir = small_disk / "data"  # the SQLite store on the small disk
    server.start()
    writers = Writers(server)
    run_id = random_run_id("dfs")
    steps = 1500
    try:
        api = server.api()
        status, _ = api.post(f"/api/v1/runs/{entity(api)}/{PROJECT}", {"id": run_id})
        assert status in (200, 201)
        status, _ = api.post(f"/api/v1/runs/{entity(api)}/{PROJECT}/{run_id}/writers",
                             {"label": "probe"})
        assert status in (200, 201)
        filler = fill(small_disk)
        # A batch that needs space: 503 + Retry-After + a JSON error naming the cause.
        status, headers, body = post_batch(server, run_id, "probe", 1, 0)
        assert status == 503, (status, body)
        assert "Retry-After" in headers
        assert body["error"]["code"] == "unavailable"
        assert "full" in body["error"]["message"], body
        print(f"store disk full: {status} {body}")
        # Writers through the agent, while the disk stays full for a few seconds.
        writers.start(run_id, 1, steps, label="w1", sleep_ms=2, shared=True, primary=False,
                      extra=("--finish-timeout", "5"))
        writers.start(run_id, 2, steps, label="w2", sleep_ms=2, shared=True, primary=False,
                      extra=("--finish-timeout", "5"))
        time.sleep(4)
        assert server.running(), server.proc.stderr.read()
        status, _ = api.get("/healthz")
        assert status == 200  # reads still work
        # The agent met the full disk (503s beyond the probe's) and kept retrying.
        refused = http_status_count(api, "", 503)
        assert refused > 1, refused
        filler.unlink()  # space returns
        for spec, rc, out, err in writers.wait_all(timeout=60):
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
        status, headers, body = post_batch(server, run_id, "probe", 1, 0)
        assert status == 200, body
        specs = {"w1": dict(writer=1, steps=steps, keys=4),
                 "w2": dict(writer=2, steps=steps, keys=4)}
        checked = assert_exactly_once(api, run_id, specs, timeout=60, others={("x", "probe"): 1})
        assert wait_for(lambda: writer_states(api, run_id).get("w1") == "finished", timeout=30)
        server.stop()
        db = next((small_disk / "data").glob("*.db"))
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        print(f"store disk full: {refused} requests refused with 503 while full, {checked} points "
              "exactly once after recovery, integrity_check ok")
    finally:
        writers.stop()
        server.stop()


def test_agent_wal_disk_full_mid_run_keeps_the_client_running_and_recovers(tmp_path,
                                                                           small_disk):
    server = FaultServer(tmp_path).start()
    writers = Writers(server, COHORT_DIR=str(small_disk / "agent"))
    run_id = random_run_id("dfa")
    steps = 2000
    try:
        p = writers.start(run_id, 1, steps, label="w", sleep_ms=3,
                          extra=("--finish-timeout", "30"))
        assert p.stdout.readline().startswith("run "), p.stderr.read()
        assert p.stdout.readline().strip() == "logged 100"
        filler = fill(small_disk)  # the agent's WAL appends now fail with ENOSPC
        time.sleep(3)
        assert p.poll() is None  # logging goes on: the frames wait in the client's memory
        status, body = server.api().get(run_path(server.api(), run_id) + "/keys")
        stored_while_full = sum(k["count"] for k in body["keys"])
        assert stored_while_full < steps * 4, "the WAL was not full?"
        filler.unlink()
        t0 = time.monotonic()
        for spec, rc, out, err in writers.wait_all(timeout=60):
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
            assert "finish ok" in out, out
        api = server.api()
        checked = assert_exactly_once(api, run_id, {"w": dict(writer=1, steps=steps, keys=4)},
                                      timeout=60)
        assert wait_for(lambda: writer_states(api, run_id).get("w") == "finished", timeout=30)
        assert run_state(api, run_id) == "finished"
        print(f"agent WAL disk full: writer finished {time.monotonic() - t0:.1f} s after space "
              f"returned, {checked} points exactly once")
    finally:
        writers.stop()
        server.stop()


def test_agent_wal_disk_full_at_init_is_a_clear_error_in_bounded_time(tmp_path, small_disk):
    server = FaultServer(tmp_path).start()
    writers = Writers(server, COHORT_DIR=str(small_disk / "agent"))
    try:
        fill(small_disk)
        t0 = time.monotonic()
        writers.start(random_run_id("dfi"), 1, 10, label="w", extra=("--init-timeout", "5"))
        (spec, rc, out, err), = writers.wait_all(timeout=30)
        assert time.monotonic() - t0 < 10
        assert rc == 2 and "init error" in out, (rc, out, err)
        assert "No space left on device" in out, out
        assert server.running()
    finally:
        writers.stop()
        server.stop()
