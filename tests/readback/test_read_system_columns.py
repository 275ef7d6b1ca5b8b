"""The columnar answer of the raw system-metrics route (GET .../{run}/system with
`Accept: application/vnd.cohort.columns`, docs/api.md "System metrics", docs/formats.md
"History columns") against a real server: the JSON answer's series bit for bit, keys without
`system/`; `Run.system_metrics()` the same DataFrame whether read as columns or as JSON."""
import json

import pytest

import rb_data  # noqa: F401  (first: puts the SDK on sys.path)
from rb_data import rb_server  # noqa: F401 (fixture)
from rb_columns import COLUMNS, assert_same_frames, bits, get, json_value  # noqa: E402

import cohort  # noqa: E402
from cohort import api_columns  # noqa: E402

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

PROJECT = "syscols"
SAMPLES = 3000
T0 = 1_700_000_000_000
SPECIAL = [float("nan"), -0.0, float("inf"), float("-inf"), 0.0, 12.5, 2.5e-310, 1e308, 0.1]




def _values(w, i):
    """rank_0: cpu every sample (the special values), gpu.0.temp every 2nd; rank_1 (half as
    many samples, at the same times as rank_0's first ones): cpu, and memory every 3rd."""
    if w == 0:
        out = {"cpu": json_value(SPECIAL[i % len(SPECIAL)])}
        if i % 2 == 0:
            out["gpu.0.temp"] = 40 + i % 50  # integral: JSON answers "41", not "41.0"
        return out
    out = {"cpu": i * 0.25}
    if i % 3 == 0:
        out["memory"] = 1000.5 + i
    return out


@pytest.fixture(scope="module")
def data(rb_server):
    """Run `sys` (writers rank_0 and rank_1 with system rows) and run `bare` (a writer with
    history only, no system rows): written through the ingest route."""
    a = rb_server.api()
    entity = a.get("/api/v1/viewer")[1]["entity"]
    runs = {}
    for name, writers in (("sys", 2), ("bare", 1)):
        status, run = a.post(f"/api/v1/runs/{entity}/{PROJECT}", {"name": name})
        assert status in (200, 201), run
        path = f"/api/v1/runs/{entity}/{PROJECT}/{run['id']}"
        for w in range(writers):
            label = f"rank_{w}"
            assert a.post(path + "/writers", {"label": label})[0] in (200, 201)
            last = SAMPLES if w == 0 else SAMPLES // 2
            for seq, start in enumerate(range(0, last, 1000), 1):
                batch = {"seq": seq}
                if name == "sys":
                    batch["system"] = [{"time": T0 + 10 * i, "values": _values(w, i)}
                                       for i in range(start, min(last, start + 1000))]
                else:
                    batch["history"] = [{"step": i, "time": T0 + i, "values": {"loss": 1.0}}
                                        for i in range(start, min(last, start + 1000))]
                status, ack = a.post(path + f"/writers/{label}/batches", batch)
                assert status == 200, ack
        runs[name] = (run["id"], path)
    return {"entity": entity, "runs": runs, "key": rb_server.config["api_key"],
            "url": rb_server.url}






@pytest.mark.parametrize("query", ["", "keys=cpu", "labels=rank_1&limit=700",
                                   "keys=cpu,gpu.0.temp&limit=500&after_step=999",
                                   f"keys=memory&min_time={T0 + 100}&max_time={T0 + 200}",
                                   "keys=nosuch"])
def test_system_columns_answer_the_json_points_bit_for_bit(data, query):
    path = data["runs"]["sys"][1] + "/system?" + query
    status, ctype, body = get(data, path, COLUMNS)
    assert status == 200 and ctype.startswith(COLUMNS + "; version=1"), (status, body[:200])
    header, series = api_columns.decode(body)
    status, ctype, text = get(data, path)
    assert status == 200 and ctype.startswith("application/json")
    want = json.loads(text)["series"]
    assert [(s.key, s.writer, s.more) for s in series] == \
        [(s["key"], s["writer"], s["more"]) for s in want]
    assert not any(s.key.startswith("system/") for s in series)
    if query != "keys=nosuch":
        assert series and all(len(s.steps) for s in series)
    for got, exp in zip(series, want):
        assert got.steps.tolist() == [p[0] for p in exp["points"]]
        assert got.times.tolist() == [p[1] for p in exp["points"]]
        assert [bits(v) for v in got.values.tolist()] == \
            [bits(cohort.api_http.number(p[2])) for p in exp["points"]]


def test_a_run_without_system_metrics_answers_empty_columns(data):
    status, ctype, body = get(data, data["runs"]["bare"][1] + "/system", COLUMNS)
    assert status == 200 and ctype.startswith(COLUMNS), (status, body[:200])
    header, series = api_columns.decode(body)
    assert header["series"] == [] and series == []
    status, _, text = get(data, data["runs"]["bare"][1] + "/system")
    assert status == 200 and json.loads(text) == {"series": []}


def test_system_negotiation_is_the_history_routes(data):
    path = data["runs"]["sys"][1] + "/system?keys=cpu"
    status, ctype, _ = get(data, path + "&buckets=10", COLUMNS)
    assert status == 406
    status, ctype, text = get(data, path + "&buckets=10", COLUMNS + ", application/json;q=0.5")
    assert status == 200 and ctype.startswith("application/json"), text[:200]
    status, _, text = get(data, path, COLUMNS + "; version=2")
    assert status == 406 and b"version 2" in text
    status, ctype, _ = get(data, path, "*/*")
    assert status == 200 and ctype.startswith("application/json")
    status, _, text = get(data, path + "&limit=0", COLUMNS)
    assert status == 400 and b"limit" in text


@pytest.fixture
def api(data):
    a = cohort.Api(base_url=data["url"], api_key=data["key"])
    yield a
    a.close()




@pytest.mark.parametrize("kw", [{}, {"labels": ["rank_1"]}, {"keys": ["gpu.0.temp"]},
                                {"keys": ["memory", "cpu"]}, {"labels": ["nobody"]},
                                {"keys": ["nosuch"]}])
@pytest.mark.parametrize("page", [None, 500])
def test_system_metrics_frames_are_identical_as_columns_and_as_json(api, data, monkeypatch,
                                                                    kw, page):
    if page:  # many pages of the columns
        monkeypatch.setattr(cohort.api_history, "COLUMN_PAGE_POINTS", page)
    run = api.run(f"{data['entity']}/{PROJECT}/{data['runs']['sys'][0]}")
    decoded = []
    real = api_columns.decode
    monkeypatch.setattr(api_columns, "decode", lambda b: decoded.append(1) or real(b))
    monkeypatch.setenv("COHORT_API_COLUMNS", "1")
    cols = run.system_metrics(**kw)
    used_columns = len(decoded)
    monkeypatch.setenv("COHORT_API_COLUMNS", "0")
    js = run.system_metrics(**kw)
    assert len(decoded) == used_columns  # JSON: never decoded
    assert_same_frames(cols, js)
    empty = kw.get("labels") == ["nobody"] or kw.get("keys") == ["nosuch"]
    assert bool(used_columns) == (not empty)
    if page and not empty:
        assert used_columns > 1  # paged
    rows = 0 if empty else SAMPLES // 2 if kw.get("labels") == ["rank_1"] or \
        kw.get("keys") == ["gpu.0.temp"] else SAMPLES + SAMPLES // 2
    assert len(cols) == rows
    if not empty:
        assert cols["time"].is_monotonic_increasing and cols["time"].dtype == np.int64


def test_system_metrics_as_columns_are_the_samples(api, data):
    df = api.run(f"{data['entity']}/{PROJECT}/{data['runs']['sys'][0]}").system_metrics()
    assert list(df.columns)[:2] == ["label", "time"]
    assert set(df.columns) == {"label", "time", "cpu", "gpu.0.temp", "memory"}
    assert len(df) == SAMPLES + SAMPLES // 2
    r0 = df[df["label"] == "rank_0"].reset_index(drop=True)
    assert r0["time"].tolist() == [T0 + 10 * i for i in range(SAMPLES)]
    assert [bits(v) for v in r0["cpu"]] == [bits(SPECIAL[i % len(SPECIAL)])
                                            for i in range(SAMPLES)]
    assert r0["gpu.0.temp"][::2].tolist() == [40.0 + i % 50 for i in range(0, SAMPLES, 2)]
    assert r0["memory"].isna().all()
    # Same times: rank_0 before rank_1 (by time, then label).
    assert df["label"][:4].tolist() == ["rank_0", "rank_1", "rank_0", "rank_1"]
