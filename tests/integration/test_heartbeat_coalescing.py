"""Coalesced heartbeats (src/server/api/heartbeat_coalescer.h) through the real `cohort server`:
a heartbeat is answered at once and written with the others within a second; the crash sweep
sees every heartbeat that was answered, so a heartbeating writer stays running under a short
--heartbeat-timeout and one that stops is crashed; an unknown writer is still a 404."""
import time

from conftest import ServerProcess, wait_for


def writer(api, base, label):
    status, body = api.get(f"{base}/writers")
    assert status == 200, body
    return next(w for w in body["writers"] if w["label"] == label)


def test_heartbeats_keep_a_writer_alive_and_silence_crashes_it(tmp_path):
    s = ServerProcess(tmp_path, ["--heartbeat-timeout", "2", "--sweep-interval", "1"]).start()
    try:
        api = s.api()
        status, me = api.get("/api/v1/viewer")
        runs = f"/api/v1/runs/{me['entity']}/p"
        status, run = api.post(runs, {"id": "hb"})
        assert status == 201, run
        base = f"{runs}/hb"
        for label in ("alive", "quiet"):
            assert api.post(f"{base}/writers", {"label": label})[0] == 201
        # 5 s of heartbeats every 0.3 s: more than twice the timeout, several sweeps.
        joined_ms = writer(api, base, "alive")["heartbeat_ms"]
        end = time.monotonic() + 5
        while time.monotonic() < end:
            status, body = api.post(f"{base}/writers/alive/heartbeat", {})
            assert status == 200 and body == {"ok": True}, body
            time.sleep(0.3)
        alive = writer(api, base, "alive")
        assert alive["state"] == "running", alive
        assert alive["heartbeat_ms"] > joined_ms + 3000, alive  # written within the run
        assert writer(api, base, "quiet")["state"] == "crashed"
        # Silence: crashed within the timeout plus a sweep or two.
        crashed = wait_for(lambda: writer(api, base, "alive")["state"] == "crashed", timeout=8)
        assert crashed
        # Unknown writers and runs are still 404s with a JSON error.
        status, body = api.post(f"{base}/writers/ghost/heartbeat", {})
        assert status == 404 and "ghost" in body["error"]["message"], body
        status, body = api.post(f"{runs}/nope/writers/alive/heartbeat", {})
        assert status == 404, body
    finally:
        s.stop()


def test_heartbeat_answered_before_a_stop_is_written_at_stop(tmp_path):
    s = ServerProcess(tmp_path).start()
    api = s.api()
    status, me = api.get("/api/v1/viewer")
    base = f"/api/v1/runs/{me['entity']}/p/r"
    assert api.post(f"/api/v1/runs/{me['entity']}/p", {"id": "r"})[0] == 201
    assert api.post(f"{base}/writers", {"label": "w"})[0] == 201
    before = writer(api, base, "w")["heartbeat_ms"]
    time.sleep(0.05)
    assert api.post(f"{base}/writers/w/heartbeat", {})[0] == 200
    s.stop()  # SIGTERM: the pending heartbeat is flushed on the way out
    s2 = ServerProcess(tmp_path).start()
    try:
        assert writer(s2.api(), base, "w")["heartbeat_ms"] > before
    finally:
        s2.stop()
