"""kill -9 of `cohort compact` at random moments while it re-cuts a store written in the chunk
layout of before schema version 4: after every kill each series holds either its old chunks or
its new ones (never both, never none: the row counts, tail and page bookkeeping of every series
agree with its chunks), readers see exactly what they saw before, and a final run finishes the
re-cut (no chunk straddles a 1,024-step edge) and a further run changes nothing.

The store is built by tests/fault/old_layout_db.cc; COHORT_SLOW_TESTS=1 kills more often.
"""
import random
import shutil
import sqlite3
import struct
import subprocess
import time

from conftest import BUILD, COHORT_BIN
from fault_helpers import SLOW

OLD_LAYOUT_BIN = BUILD / "tests" / "fault" / "cohort_old_layout_db"
KEYS, POINTS = 24, 25_000
KILLS = 30 if SLOW else 8
ENTRY = struct.Struct("<7q5dq")  # one summary-page entry (sqlite_summary_pages.cc)


def digest(db):
    out = subprocess.run([str(OLD_LAYOUT_BIN), "digest", str(db)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def straddling(con):
    return con.execute("SELECT count(*) FROM chunks WHERE count > 0 AND "
                       "min_step / 1024 <> max_step / 1024").fetchone()[0]


def check_bookkeeping(db):
    """Every series' row agrees with its chunks and pages; returns (re-cut, old) series."""
    con = sqlite3.connect(db)
    try:
        recut = old = 0
        for pk, count, next_idx, tail_idx, tail_count, tail_chunks, paged_upto in con.execute(
                "SELECT pk, count, next_idx, tail_idx, tail_count, tail_chunks, paged_upto "
                "FROM series"):
            chunks = con.execute("SELECT pk, idx, count FROM chunks WHERE series_pk = ? "
                                 "ORDER BY idx", (pk,)).fetchall()
            assert sum(c for _, _, c in chunks) == count, (pk, "points")
            assert all(idx < next_idx for _, idx, _ in chunks), (pk, "next_idx")
            tail = [(idx, c) for _, idx, c in chunks if idx >= tail_idx]
            assert len(tail) == tail_chunks and sum(c for _, c in tail) == tail_count, (pk, tail)
            paged = {}
            for (data,) in con.execute("SELECT data FROM chunk_pages WHERE series_pk = ?", (pk,)):
                for off in range(0, len(data), ENTRY.size):
                    entry = ENTRY.unpack_from(data, off)
                    paged[entry[0]] = entry[1]
            below = {idx: cpk for cpk, idx, _ in chunks if idx < paged_upto}
            assert paged == below, (pk, "pages")
            if chunks and chunks[0][1] == 0:
                old += 1
            else:
                recut += 1
        return recut, old
    finally:
        con.close()


def compact(db, **kw):
    return subprocess.Popen([str(COHORT_BIN), "compact", "--store", str(db), "--progress",
                             "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kw)


def test_compact_killed_at_random_moments_leaves_each_series_old_or_new(tmp_path):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    db = tmp_path / "cohort.db"
    built = subprocess.run([str(OLD_LAYOUT_BIN), "build", str(db), str(KEYS), str(POINTS)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    con = sqlite3.connect(db)
    assert straddling(con) > 0
    con.close()
    before = digest(db)
    assert len(before.splitlines()) == KEYS

    # How long a full run takes here (on a copy), to aim the kills inside it.
    probe_db = tmp_path / "probe.db"
    shutil.copy(db, probe_db)
    t0 = time.monotonic()
    probe = compact(probe_db)
    probe.communicate(timeout=300)
    full_s = time.monotonic() - t0
    assert probe.returncode == 0
    kills_inside = 0
    old = KEYS
    for i in range(KILLS):
        proc = compact(db)
        # Inside what is left of the work (the first kill surely inside it).
        left_s = full_s * old / KEYS
        delay = left_s * 0.4 if i == 0 else rng.uniform(0.0, left_s)
        time.sleep(delay)
        if proc.poll() is None:
            proc.kill()  # SIGKILL
            kills_inside += 1
        proc.communicate(timeout=60)
        recut, old = check_bookkeeping(db)
        assert digest(db) == before, (seed, delay, recut, old)
        if old == 0:
            break

    assert kills_inside >= 1, (seed, full_s)
    done = compact(db)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, (seed, err)
    assert "0 now" in out, out
    assert check_bookkeeping(db) == (KEYS, 0), seed
    con = sqlite3.connect(db)
    assert straddling(con) == 0
    con.close()
    assert digest(db) == before, seed
    again = subprocess.run([str(COHORT_BIN), "compact", "--store", str(db), "--progress",
                            "never"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"re-cut 0 of {KEYS} series"), again.stdout
    print(f"compact kill: seed {seed}, full run {full_s:.2f} s, {kills_inside} kill -9 during "
          f"the re-cut")


def test_compact_names_a_store_it_cannot_recut(tmp_path):
    missing = subprocess.run([str(COHORT_BIN), "compact", "--store", str(tmp_path / "no.db")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert "not found" in missing.stderr and "no.db" in missing.stderr, missing.stderr
    assert not (tmp_path / "no.db").exists()
    pg = subprocess.run([str(COHORT_BIN), "compact", "--store", "postgresql://u@h/db"],
                        capture_output=True, text=True, timeout=60)
    assert pg.returncode == 1
    assert "only SQLite stores" in pg.stderr, pg.stderr
