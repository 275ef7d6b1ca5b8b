"""The SQLite store gives the space of a deleted run back to the file system (docs/operations.md,
"Disk space"): the real server's sweep releases the free pages once they are many, the file
shrinks, and the run that was kept reads back unchanged."""
import random
import sqlite3
import time

import pytest

from conftest import ServerProcess
from test_api import history, ingest, join, make_run, runs_path


@pytest.fixture
def server(tmp_path):
    s = ServerProcess(tmp_path, ["--sweep-interval", "1"]).start()
    yield s
    s.stop()


def pages(server):
    """(page_count, freelist_count, page_size) of the store as committed (WAL included)."""
    db = sqlite3.connect(f"file:{server.data_dir / 'cohort.db'}?mode=ro", uri=True)
    try:
        return tuple(db.execute(f"PRAGMA {p}").fetchone()[0]
                     for p in ("page_count", "freelist_count", "page_size"))
    finally:
        db.close()


def log_noise(api, name, batches, rng):
    """A run of `batches` x 10,000 points that do not compress (8 bytes each)."""
    run = make_run(api, name=name)
    join(api, run, "w")
    for seq in range(1, batches + 1):
        rows = [{"step": (seq - 1) * 10000 + i, "time": 1, "values": {"x": rng.uniform(-1e6, 1e6)}}
                for i in range(10000)]
        status, body = ingest(api, run, "w", {"seq": seq, "history": rows})
        assert status == 200, body
    return run


def values(api, run):
    series = history(api, run, keys="x", limit=100000)
    assert len(series) == 1
    return [p[2] for p in series[0]["points"]]


def test_a_deleted_runs_space_goes_back_to_the_file_system(server, tmp_path):
    api = server.api()
    rng = random.Random(5)
    kept = log_noise(api, "kept", 2, rng)
    gone = log_noise(api, "gone", 25, rng)
    kept_values = values(api, kept)
    assert len(kept_values) == 20000
    before, free_before, page_size = pages(server)
    time.sleep(2)  # sweeps: the few pages that compaction freed stay for the next writes
    assert pages(server)[0] >= before
    assert pages(server)[1] == free_before

    status, body = api.call("DELETE", f"{runs_path(api)}/{gone['id']}", None)
    assert status in (200, 204), body
    deadline = time.time() + 30
    while time.time() < deadline:
        count, free, _ = pages(server)
        if free == 0:
            break
        time.sleep(0.2)
    count, free, _ = pages(server)
    assert free == 0, f"{free} free pages left after 30 s of sweeps"
    # 250,000 points of 8 bytes: ~2 MB, ~490 pages gone.
    assert before - count > 400, (before, count)
    assert values(api, kept) == kept_values
    server.stop()
    size = (server.data_dir / "cohort.db").stat().st_size
    assert size == count * page_size, (size, count)
    assert size < before * page_size - 400 * page_size
