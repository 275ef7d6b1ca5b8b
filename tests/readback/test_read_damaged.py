"""cohort.Api reading a run whose stored data is damaged, against a real server: a series chunk
inside the server's SQLite file is overwritten while the server is stopped (as
tests/fault/test_corruption.py does), the server restarted; its answers then skip that chunk
and say so (``"warnings"``, docs/api.md "History"), and every read of the Python API that gets
such an answer warns (a SkippedDataWarning, a UserWarning) once per skipped chunk, naming the
run, the key, the writer and the steps left out, at the user's line."""
import sqlite3
import warnings

import pytest

import rb_data  # noqa: F401  (first: puts the SDK on sys.path)
from conftest import ServerProcess

import cohort  # noqa: E402
from cohort.api_warnings import SkippedDataWarning  # noqa: E402

PROJECT = "dmg"
RUN = "dmg1"
STEPS = 3000  # three chunks of up to 1,024 points per series
T0 = 1_700_000_000_000


def ok(answer):
    status, payload = answer
    assert status in (200, 201), payload
    return payload


def _damage_first_chunk(con, key):
    """Flips a byte in the middle of the first chunk of `key`: (min_step, max_step) of it."""
    pk, length, lo, hi = con.execute(
        "SELECT c.pk, length(c.data), c.min_step, c.max_step FROM chunks c "
        "JOIN series s ON s.pk = c.series_pk WHERE s.key = ? ORDER BY c.idx LIMIT 1",
        (key,)).fetchone()
    blob = bytearray(con.execute("SELECT data FROM chunks WHERE pk = ?", (pk,)).fetchone()[0])
    blob[length // 2] ^= 0xFF
    con.execute("UPDATE chunks SET data = ? WHERE pk = ?", (bytes(blob), pk))
    return lo, hi


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """A run (one writer "w0": k0, k1 at steps 0..2999; system cpu at 3000 times) whose first
    chunks of k0 and of system/cpu are damaged; the restarted server and what was damaged."""
    server = ServerProcess(tmp_path_factory.mktemp("dmg_home")).start()
    try:
        http = server.api()
        entity = ok(http.get("/api/v1/viewer"))["entity"]
        base = f"/api/v1/runs/{entity}/{PROJECT}"
        ok(http.post(base, {"id": RUN}))
        ok(http.post(f"{base}/{RUN}/writers", {"label": "w0", "primary": True}))
        for seq, start in enumerate(range(0, STEPS, 500), 1):
            steps = range(start, start + 500)
            ok(http.post(f"{base}/{RUN}/writers/w0/batches", {
                "seq": seq,
                "history": [{"step": s, "time": T0 + s, "values": {"k0": s, "k1": -s}}
                            for s in steps],
                "system": [{"time": T0 + 1000 * s, "values": {"cpu": s % 100}}
                           for s in steps]}))
        ok(http.post(f"{base}/{RUN}/writers/w0/finish", {"exit_code": 0}))
        server.stop()
        server.proc.stdout.close()  # this process's; start() makes a new one
        con = sqlite3.connect(str(next(server.data_dir.glob("*.db"))))
        k0 = _damage_first_chunk(con, "k0")
        cpu = _damage_first_chunk(con, "system/cpu")
        con.commit()
        con.close()
        server.start()
        yield {"server": server, "path": f"{entity}/{PROJECT}/{RUN}", "k0": k0, "cpu": cpu}
    finally:
        server.stop()
        if server.proc is not None:
            server.proc.stdout.close()


@pytest.fixture
def api(damaged):
    server = damaged["server"]
    a = cohort.Api(base_url=server.url, api_key=server.config["api_key"])
    yield a
    a.close()


def skipped(caught):
    """The SkippedDataWarnings of `caught`, each checked to point at this file (the user's
    call, not the package's insides)."""
    out = [w for w in caught if issubclass(w.category, SkippedDataWarning)]
    for w in out:
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message))
        assert issubclass(w.category, UserWarning)
    return [str(w.message) for w in out]


def check_text(text, damaged, key, lo, hi):
    assert f"run {damaged['path']}" in text, text
    if key.startswith("system/"):  # stepped by time: a point a second here
        what = (f"{(hi - lo) // 1000 + 1} point(s) of system metric {key[7:]!r} (writer 'w0') "
                f"at times {lo}..{hi}")
    else:
        what = f"{hi - lo + 1} point(s) of {key!r} (writer 'w0') at steps {lo}..{hi}"
    assert what in text, text
    assert "checksum" in text and "missing from this result" in text, text
    assert "backup" in text, text  # what to do


@pytest.mark.parametrize("columns", ["1", "0"])  # binary columns, and JSON
def test_history_of_a_damaged_run_warns_once_naming_what_was_skipped(api, damaged, columns,
                                                                     monkeypatch):
    monkeypatch.setenv("COHORT_API_COLUMNS", columns)
    lo, hi = damaged["k0"]
    run = api.run(damaged["path"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = run.history(keys=["k0", "k1"])
    texts = skipped(caught)
    assert len(texts) == 1, texts
    check_text(texts[0], damaged, "k0", lo, hi)
    # What was read is the rest, as it was logged.
    assert len(df) == STEPS
    got = df.dropna(subset=["k0"])
    assert got["step"].tolist() == [s for s in range(STEPS) if not lo <= s <= hi]
    assert (got["k0"] == got["step"]).all() and (df["k1"] == -df["step"]).all()
    # The undamaged key alone: no warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(run.history(keys=["k1"])) == STEPS
    assert skipped(caught) == []


@pytest.mark.parametrize("columns", ["1", "0"])
def test_scan_history_warns_once_though_many_pages_meet_the_damaged_chunk(api, damaged, columns,
                                                                          monkeypatch):
    # Pages of 100 points over two keys: k1's cursor walks through k0's damaged range, so ~20
    # answers name the same skipped chunk; the scan says it once, when it meets it.
    monkeypatch.setenv("COHORT_API_COLUMNS", columns)
    lo, hi = damaged["k0"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = list(api.run(damaged["path"]).scan_history(keys=["k0", "k1"], page_size=100))
    texts = skipped(caught)
    assert len(texts) == 1, texts
    check_text(texts[0], damaged, "k0", lo, hi)
    assert len(rows) == STEPS and sum("k0" in r for r in rows) == STEPS - (hi - lo + 1)


def test_bucketed_history_and_api_history_warn_at_the_callers_line(api, damaged):
    lo, hi = damaged["k0"]
    run = api.run(damaged["path"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = run.history(keys=["k0"], samples=10)
    texts = skipped(caught)
    assert len(texts) == 1, texts
    check_text(texts[0], damaged, "k0", lo, hi)
    assert df["step"].min() > hi  # the buckets of the skipped steps hold nothing: no rows
    # Api.history reads runs on threads: the warning still comes on this thread, at this line.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        many = api.history([damaged["path"]], keys=["k0"], max_workers=2)
    texts = skipped(caught)
    assert len(texts) == 1, texts
    check_text(texts[0], damaged, "k0", lo, hi)
    assert len(many) == STEPS - (hi - lo + 1)
    # The default filter shows it (a UserWarning is not hidden as a DeprecationWarning is).
    with pytest.warns(UserWarning, match="could not be read"):
        run.history(keys=["k0"])


@pytest.mark.parametrize("columns", ["1", "0"])
def test_system_metrics_of_a_damaged_run_warn(api, damaged, columns, monkeypatch):
    monkeypatch.setenv("COHORT_API_COLUMNS", columns)
    lo, hi = damaged["cpu"]
    run = api.run(damaged["path"])
    for samples in (None, 5):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sm = run.system_metrics(samples=samples)
        texts = skipped(caught)
        assert len(texts) == 1, (samples, texts)
        check_text(texts[0], damaged, "system/cpu", lo, hi)
        if samples is None:
            assert len(sm) == STEPS - ((hi - lo) // 1000 + 1)
            assert sm["time"].min() > hi
