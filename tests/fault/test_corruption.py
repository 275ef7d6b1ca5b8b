"""Torn and corrupted files: the agent's WAL (a torn tail, a flipped byte in the middle) and a
series chunk inside the server's SQLite file. Damage is detected by CRC-32C, reported, and
skipped; everything else is recovered and served; nothing crashes.

The record-level cases (a torn tail cut at every offset, flipped bytes in every position, a bad
ACK file, a damaged segment header) are unit tests in src/wal (log_test.cc, segment_reader_test.cc,
fault_test.cc); the chunk decoder's refusals are src/series/chunk_test.cc. Here the real agent,
`cohort sync` and the server meet the damage end to end.
"""
import os
import sqlite3
import subprocess

from fault_helpers import (FaultServer, Writers, entity, key_counts, random_run_id, run_path,
                           value, PROJECT)
from conftest import COHORT_BIN, wait_for


def history(api, run_id, key, label, **query):
    q = "&".join(f"{k}={v}" for k, v in query.items())
    return api.get(run_path(api, run_id) + f"/history?keys={key}&writers={label}&{q}")


def test_torn_and_corrupted_wal_is_reported_and_the_rest_uploaded(tmp_path):
    server = FaultServer(tmp_path).start()
    writers = Writers(server, COHORT_MODE="offline", COHORT_AGENT_IDLE_S="1")
    run_id = random_run_id("wal")
    steps = 3000
    try:
        # Offline: the records stay in the WALs, small frames (the client flushes every 100 ms).
        writers.start(run_id, 1, steps, label="torn", sleep_ms=1, shared=True, primary=True)
        writers.start(run_id, 2, steps, label="flipped", sleep_ms=1, shared=True, primary=False)
        for spec, rc, out, err in writers.wait_all(timeout=60):
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
        writers.stop()  # the agent lets go of the WALs
        assert wait_for(lambda: not writers.agent_pids(), timeout=10)
        data = server.home / ".local" / "share" / "cohort" / "agent"
        torn = sorted((data / run_id / "torn" / "wal").glob("*.wal"))
        flipped = sorted((data / run_id / "flipped" / "wal").glob("*.wal"))
        assert torn and flipped, list((data / run_id).rglob("*"))
        # A torn tail: the last segment loses its final 37 bytes (a record cut in the middle).
        size = torn[-1].stat().st_size
        os.truncate(torn[-1], size - 37)
        # A flipped byte in the middle of the first segment.
        with open(flipped[0], "r+b") as f:
            f.seek(flipped[0].stat().st_size // 2)
            b = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([b[0] ^ 0x5A]))
        sync = subprocess.run([str(COHORT_BIN), "sync", "--quiet", str(data / run_id)],
                              env=writers.env, capture_output=True, text=True, timeout=120)
        assert sync.returncode == 0, (sync.stdout, sync.stderr)
        assert "damage" in sync.stderr.lower() or "recovery" in sync.stderr.lower(), sync.stderr
        api = server.api()
        counts = wait_for(lambda: (c := key_counts(api, run_id)) and c, timeout=30)
        checked = 0
        for label, writer in (("torn", 1), ("flipped", 2)):
            for k in range(4):
                status, body = history(api, run_id, f"k{k}", label)
                assert status == 200, body
                points = body["series"][0]["points"] if body["series"] else []
                got = [p[0] for p in points]
                assert len(got) == len(set(got)), "a step stored twice"
                assert all(p[2] == value(writer, p[0], k) for p in points)
                checked += len(points)
                if label == "torn":  # only the tail can be missing
                    assert got == list(range(len(got))) and len(got) > steps // 2, got[-5:]
                else:  # one damaged stretch is skipped; what follows it is there
                    missing = sorted(set(range(steps)) - set(got))
                    assert missing, "the flipped byte destroyed nothing?"
                    assert missing == list(range(missing[0], missing[-1] + 1)), missing
                    assert got[-1] == steps - 1
        print(f"WAL damage: {checked} points recovered, counts {sorted(counts.items())[:2]}...")
    finally:
        writers.stop()
        server.stop()


def test_corrupted_chunk_in_the_store_is_reported_without_crashing(tmp_path):
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    run_id = random_run_id("chk")
    steps = 3000  # three chunks of up to 1,024 points per series
    try:
        writers.start(run_id, 1, steps, keys=2, label="w", sleep_ms=0)
        for spec, rc, out, err in writers.wait_all(timeout=60):
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
        api = server.api()
        want = {("k0", "w"): steps, ("k1", "w"): steps}
        assert wait_for(lambda: key_counts(api, run_id) == want, timeout=30)
        writers.stop()
        server.stop()
        db = next(server.data_dir.glob("*.db"))
        con = sqlite3.connect(str(db))
        row = con.execute(
            "SELECT c.pk, length(c.data), c.min_step, c.max_step FROM chunks c "
            "JOIN series s ON s.pk = c.series_pk WHERE s.key = 'k0' ORDER BY c.idx LIMIT 1"
        ).fetchone()
        pk, length, lo, hi = row
        blob = bytearray(con.execute("SELECT data FROM chunks WHERE pk = ?", (pk,)).fetchone()[0])
        blob[length // 2] ^= 0xFF
        con.execute("UPDATE chunks SET data = ? WHERE pk = ?", (bytes(blob), pk))
        con.commit()
        con.close()
        server.start()
        api = server.api()
        # The damaged chunk is skipped: the rest of the series is served, with a warning that
        # names the skipped step range.
        status, body = history(api, run_id, "k0", "w")
        assert status == 200, (status, body)
        got = [p[0] for p in body["series"][0]["points"]]
        assert got == [s for s in range(steps) if not lo <= s <= hi], got[:5]
        assert all(p[2] == value(1, p[0], 0) for p in body["series"][0]["points"])
        warnings = body["warnings"]
        assert len(warnings) == 1, warnings
        w = warnings[0]
        assert (w["key"], w["writer"], w["min_step"], w["max_step"]) == ("k0", "w", lo, hi), w
        assert w["points"] == hi - lo + 1, w
        assert "checksum" in w["message"], w
        message = w["message"]
        assert server.running()
        # The undamaged series of the run reads in full, without warnings.
        status, body = history(api, run_id, "k1", "w")
        assert status == 200 and len(body["series"][0]["points"]) == steps
        assert "warnings" not in body, body
        # The damaged series outside the damaged chunk reads without a warning.
        status, body = history(api, run_id, "k0", "w", min_step=hi + 1)
        assert status == 200, body
        assert [p[0] for p in body["series"][0]["points"]] == list(range(hi + 1, steps))
        assert "warnings" not in body, body
        # A chart whose buckets each hold whole chunks answers from the chunk summaries alone;
        # one that must decode the damaged chunk leaves its points out and warns the same way.
        status, body = history(api, run_id, "k0", "w", buckets=1)
        assert status == 200, body
        assert body["series"][0]["buckets"][0]["count"] == steps
        status, body = history(api, run_id, "k0", "w", buckets=10)
        assert status == 200, (status, body)
        assert sum(b["count"] for b in body["series"][0]["buckets"]) == steps - (hi - lo + 1)
        assert [(w["min_step"], w["max_step"]) for w in body["warnings"]] == [(lo, hi)], body
        assert server.running()
        # The server logged the damage once, however often it was read.
        server.stop()
        log = server.proc.stderr.read()
        assert log.count("damaged chunk skipped") == 1, log[-2000:]
        print(f"chunk corruption: chunk {pk} (steps {lo}..{hi}) skipped ({message!r}), the rest "
              "served")
    finally:
        writers.stop()
        server.stop()
