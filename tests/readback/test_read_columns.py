"""The columnar history answer (docs/formats.md "History columns", docs/api.md "History")
against a real server: the same points as the JSON answer, bit for bit; `Accept` negotiation and
its errors; cohort.Api's frames and rows identical whether read as columns or as JSON."""
import json
import math

import pytest

import rb_data  # noqa: F401  (first: puts the SDK on sys.path)
from rb_data import rb_server  # noqa: F401 (fixture)
from rb_columns import COLUMNS, assert_same_frames, bits, get, json_bits, json_value  # noqa: E402

import cohort  # noqa: E402
from cohort import api_columns  # noqa: E402

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

PROJECT = "cols"
STEPS = 3000
SPECIAL = [float("nan"), -0.0, float("inf"), float("-inf"), 0.0, 1.0, 2.5e-310, 1e308, 0.1]


def loss(writer, step):
    return SPECIAL[step % len(SPECIAL)] if writer == 0 else step * 0.5




@pytest.fixture(scope="module")
def data(rb_server):
    """Run `two` (writers rank_0: loss every step, acc every 3rd, int every 5th; rank_1: loss
    up to STEPS/2) and run `one` (rank_0 alone, as in `two`): written through the ingest
    route."""
    a = rb_server.api()
    entity = a.get("/api/v1/viewer")[1]["entity"]
    runs = {}
    for name, writers in (("two", 2), ("one", 1)):
        status, run = a.post(f"/api/v1/runs/{entity}/{PROJECT}", {"name": name})
        assert status in (200, 201), run
        path = f"/api/v1/runs/{entity}/{PROJECT}/{run['id']}"
        for w in range(writers):
            label = f"rank_{w}"
            assert a.post(path + "/writers", {"label": label})[0] in (200, 201)
            last = STEPS if w == 0 else STEPS // 2
            for seq, start in enumerate(range(0, last, 1000), 1):
                rows = []
                for s in range(start, min(last, start + 1000)):
                    values = {"loss": json_value(loss(w, s))}
                    if w == 0 and s % 3 == 0:
                        values["acc"] = s / 1000
                    if w == 0 and s % 5 == 0:
                        values["int"] = s  # integral: JSON answers "5", not "5.0"
                    rows.append({"step": s, "time": 1_700_000_000_000 + 7 * s, "values": values})
                status, ack = a.post(path + f"/writers/{label}/batches",
                                     {"seq": seq, "history": rows})
                assert status == 200, ack
        runs[name] = (run["id"], path)
    return {"entity": entity, "runs": runs, "key": rb_server.config["api_key"],
            "url": rb_server.url}








@pytest.mark.parametrize("query", ["keys=loss,acc,int", "keys=loss&limit=700",
                                   "keys=loss,acc&limit=500&after_step=1499",
                                   "writers=rank_1&limit=1500", "keys=loss&min_step=10&max_step=20",
                                   "keys=nosuch"])
def test_columns_answer_the_json_points_bit_for_bit(data, query):
    path = data["runs"]["two"][1] + "/history?" + query
    status, ctype, body = get(data, path, COLUMNS)
    assert status == 200 and ctype.startswith(COLUMNS + "; version=1"), (status, body[:200])
    header, series = api_columns.decode(body)
    status, ctype, text = get(data, path)
    assert status == 200 and ctype.startswith("application/json")
    want = json.loads(text)["series"]
    assert [(s.key, s.writer, s.more) for s in series] == \
        [(s["key"], s["writer"], s["more"]) for s in want]
    assert [len(s.steps) for s in series] == [len(s["points"]) for s in want]
    for got, exp in zip(series, want):
        assert got.steps.tolist() == [p[0] for p in exp["points"]]
        assert got.times.tolist() == [p[1] for p in exp["points"]]
        assert [bits(v) for v in got.values.tolist()] == [json_bits(p[2]) for p in exp["points"]]
    assert "warnings" not in header


def test_columns_keep_nan_negative_zero_and_infinities(data):
    _, _, body = get(data, data["runs"]["two"][1] + "/history?keys=loss&writers=rank_0&limit=9",
                      COLUMNS)
    (s,) = api_columns.decode(body)[1]
    assert s.more is True and s.steps.dtype == np.int64 and s.values.dtype == np.float64
    assert [bits(v) for v in s.values] == [bits(v) for v in SPECIAL]
    assert math.copysign(1, s.values[1]) == -1


def test_json_stays_the_default(data):
    path = data["runs"]["two"][1] + "/history?keys=loss&limit=3"
    for accept in (None, "*/*", "application/json", "text/html,application/xhtml+xml,*/*;q=0.8",
                   COLUMNS + ";q=0.2, application/json"):
        status, ctype, body = get(data, path, accept)
        assert status == 200 and ctype.startswith("application/json"), accept
        assert len(json.loads(body)["series"][0]["points"]) == 3


def test_bucketed_reads_answer_json_when_it_is_acceptable(data):
    path = data["runs"]["two"][1] + "/history?keys=loss&buckets=10"
    status, ctype, body = get(data, path, COLUMNS + ", application/json;q=0.5")
    assert status == 200 and ctype.startswith("application/json")
    assert json.loads(body)["series"][0]["buckets"]


@pytest.mark.parametrize("query,accept,message", [
    ("buckets=10", COLUMNS, "answers raw reads only"),
    ("", "text/csv", "'text/csv' names no type this route answers"),
    ("", COLUMNS + "; version=7", "version 7 is not served"),
    ("", "application/json;q=x", "bad quality value"),
])
def test_unacceptable_accept_is_406_naming_the_problem(data, query, accept, message):
    status, ctype, body = get(data, data["runs"]["two"][1] + "/history?keys=loss&" + query,
                               accept)
    assert status == 406 and ctype.startswith("application/json")
    err = json.loads(body)["error"]
    assert err["code"] == "not_acceptable" and message in err["message"], err


def test_a_damaged_answer_is_refused(data):
    _, _, body = get(data, data["runs"]["two"][1] + "/history?keys=loss&limit=20", COLUMNS)
    bad = bytearray(body)
    bad[-3] ^= 0x10
    with pytest.raises(cohort.CommError, match="checksum"):
        api_columns.decode(bytes(bad))
    with pytest.raises(cohort.CommError):
        api_columns.decode(body[:-8])


@pytest.fixture
def api(data):
    a = cohort.Api(base_url=data["url"], api_key=data["key"])
    yield a
    a.close()


def _both(monkeypatch, read):
    """(read() as columns, read() as JSON)."""
    monkeypatch.setenv("COHORT_API_COLUMNS", "1")
    cols = read()
    monkeypatch.setenv("COHORT_API_COLUMNS", "0")
    js = read()
    monkeypatch.delenv("COHORT_API_COLUMNS")
    return cols, js




@pytest.mark.parametrize("kw", [{}, {"keys": ["loss"]}, {"keys": ["acc", "int", "loss"]},
                                {"writers": ["rank_1"]}, {"x_axis": "time"},
                                {"keys": ["nosuch"]}])
def test_history_frames_are_identical_as_columns_and_as_json(api, data, monkeypatch, kw):
    run = api.run(f"{data['entity']}/{PROJECT}/{data['runs']['two'][0]}")
    cols, js = _both(monkeypatch, lambda: run.history(**kw))
    assert_same_frames(cols, js)
    rows = 0 if kw.get("keys") == ["nosuch"] else STEPS // 2 if kw.get("writers") else \
        STEPS + STEPS // 2
    assert len(cols) == rows
    if "int" in cols:
        assert cols["int"].dtype == np.float64  # doubles, though JSON spells them "5"


def test_history_of_many_steps_pages_the_same_way(api, data, monkeypatch):
    run = api.run(f"{data['entity']}/{PROJECT}/{data['runs']['two'][0]}")
    monkeypatch.setattr(cohort.api_history, "COLUMN_PAGE_POINTS", 1)
    cols, js = _both(monkeypatch, lambda: cohort.api_history.history_frame(
        api._t, run._base, None, None, None, "step", True, page_points=600))
    assert_same_frames(cols, js)


def _row_bits(rows):
    return [{k: (bits(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]


def test_scan_history_rows_are_identical_as_columns_and_as_json(api, data, monkeypatch):
    run = api.run(f"{data['entity']}/{PROJECT}/{data['runs']['two'][0]}")
    cols, js = _both(monkeypatch, lambda: list(run.scan_history(page_size=700)))
    assert len(cols) == STEPS + STEPS // 2
    assert _row_bits(cols) == _row_bits(js)
    assert all(isinstance(r["int"], float) for r in cols + js if "int" in r)


def test_api_history_of_many_runs_is_one_long_frame(api, data, monkeypatch):
    two, one = data["runs"]["two"][0], data["runs"]["one"][0]
    paths = [f"{data['entity']}/{PROJECT}/{two}", f"{data['entity']}/{PROJECT}/{one}"]
    df = api.history([paths[0], api.run(paths[1])], keys=["loss", "acc"], max_workers=2)
    assert list(df.columns) == ["run", "writer", "step", "time", "acc", "loss"]
    assert df["run"].tolist() == [two] * (STEPS + STEPS // 2) + [one] * STEPS
    for run_id, path in zip((two, one), paths):
        alone = api.run(path).history(keys=["loss", "acc"])
        if "writer" not in alone:
            alone.insert(0, "writer", "rank_0")
        part = df[df["run"] == run_id].drop(columns=["run"]).reset_index(drop=True)
        assert_same_frames(part[alone.columns], alone)
    cols, js = _both(monkeypatch, lambda: api.history(paths, keys=["loss"]))
    assert_same_frames(cols, js)
    # Run `one` has no writer rank_1: no rows of it, and the other run's still come.
    only_two = api.history(paths[::-1], keys=["loss"], writers=["rank_1"])
    assert set(only_two["run"]) == {two} and len(only_two) == STEPS // 2
    assert list(only_two.columns) == ["run", "writer", "step", "time", "loss"]
    assert only_two["step"].tolist() == list(range(STEPS // 2))
    assert only_two["step"].dtype == np.int64 and only_two["loss"].dtype == np.float64
    empty = api.history(paths, keys=["nosuch"])
    assert len(empty) == 0 and list(empty.columns) == ["run", "writer", "step", "time"]
    with pytest.raises(cohort.UsageError, match="max_workers"):
        api.history(paths, max_workers=0)


def test_a_server_that_answers_json_to_the_columns_request_is_read_all_the_same(api, data,
                                                                                monkeypatch):
    # As an older server would: the client asks for columns and gets JSON.
    run = api.run(f"{data['entity']}/{PROJECT}/{data['runs']['two'][0]}")
    js = run.history()
    monkeypatch.setattr(api_columns, "ACCEPT", "application/json")
    calls = []
    real = cohort.api_history._columns_of_json
    monkeypatch.setattr(cohort.api_history, "_columns_of_json",
                        lambda d: calls.append(1) or real(d))
    assert_same_frames(run.history(), js)
    assert calls
    assert _row_bits(run.scan_history(page_size=500)) == _row_bits(
        list(run.scan_history(page_size=700)))
