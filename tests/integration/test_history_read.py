"""Raw history reads through the real `cohort server` (src/server/api/history_api.cc): large
answers are written in pieces, and every double must still come back bit for bit."""
import math
import random
import struct
import urllib.parse

P = "/api/v1/runs/{e}/proj"


def test_large_raw_read_returns_every_double_exactly_across_write_buffers(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200
    base = P.format(e=me["entity"])
    status, run = api.post(base, {"name": "exact"})
    assert status in (200, 201), run
    path = f"{base}/{run['id']}"
    status, w = api.post(path + "/writers", {"label": "w"})
    assert status in (200, 201), w

    # Enough points for the answer to fill the writer's buffer many times over, with the
    # longest forms (17-digit values, 19-digit steps and times, subnormals, extremes, non-finite
    # values, -0.0) spread over it so that some land at a buffer's end.
    rng = random.Random(5)
    specials = [5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 0.1 + 0.2,
                -1.0000000000000002, 123456789012345680.0, "NaN", "Infinity", "-Infinity"]
    points = []
    for i in range(20000):
        if i % 97 == 0:
            v = specials[(i // 97) % len(specials)]
        else:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if not math.isfinite(v):
                v = rng.random()
        step = i if i < 19990 else 9_000_000_000_000_000_000 + i  # 19 digits at the end
        time_ms = 1_700_000_000_000 + i if i % 2 else 9_100_000_000_000_000_000 - i
        points.append((step, time_ms, v))
    for seq, start in enumerate(range(0, len(points), 5000), 1):
        rows = [{"step": s, "time": t, "values": {"x": v}} for s, t, v in points[start:start + 5000]]
        status, body = api.post(f"{path}/writers/w/batches", {"seq": seq, "history": rows})
        assert status == 200, body

    q = urllib.parse.urlencode({"keys": "x", "limit": 100000})
    status, body = api.get(f"{path}/history?{q}")
    assert status == 200, body
    got = body["series"][0]["points"]
    assert body["series"][0]["more"] is False
    assert len(got) == len(points)
    for (step, time_ms, v), (gs, gt, gv) in zip(points, got):
        assert (gs, gt) == (step, time_ms)
        if isinstance(v, str):
            assert gv == v
        else:
            assert isinstance(gv, float) or v == int(v)
            assert struct.pack("<d", float(gv)) == struct.pack("<d", v), (step, v, gv)


def _run_with_writer(api, base, name, label="w"):
    status, run = api.post(base, {"name": name})
    assert status in (200, 201), run
    status, w = api.post(f"{base}/{run['id']}/writers", {"label": label})
    assert status in (200, 201), w
    return run["id"]


def test_bucket_without_a_finite_value_answers_null_statistics_and_its_nan_count(api):
    """NaN steps are gaps: a bucket of NaN (or only infinities) has no min, max or mean; the
    mean of a bucket with some NaN is the mean of its numbers (docs/api.md, "History")."""
    status, me = api.get("/api/v1/viewer")
    base = P.format(e=me["entity"])
    run = _run_with_writer(api, base, "nan-buckets")
    values = [1.0, 3.0, "NaN", "NaN", "NaN", "NaN", 5.0, "NaN", "Infinity", "Infinity"]
    rows = [{"step": i, "time": 1000 + i, "values": {"x": v}} for i, v in enumerate(values)]
    status, body = api.post(f"{base}/{run}/writers/w/batches", {"seq": 1, "history": rows})
    assert status == 200, body
    status, body = api.get(f"{base}/{run}/history?keys=x&buckets=5")
    assert status == 200, body
    b = body["series"][0]["buckets"]
    assert [x["count"] for x in b] == [2, 2, 2, 2, 2]
    assert (b[0]["min"], b[0]["max"], b[0]["mean"], b[0]["nan_count"]) == (1.0, 3.0, 2.0, 0)
    for nan_only in (b[1], b[2]):
        assert (nan_only["min"], nan_only["max"], nan_only["mean"], nan_only["nan_count"]) == (None, None, None, 2)
        assert nan_only["last"] == "NaN"
    assert (b[3]["min"], b[3]["max"], b[3]["mean"], b[3]["nan_count"]) == (5.0, 5.0, 5.0, 1)
    assert (b[4]["min"], b[4]["max"], b[4]["mean"], b[4]["nan_count"]) == (None, None, None, 0)


def test_bucket_holding_both_infinities_answers_them_as_its_extremes(api):
    """A bucket whose values run from -Infinity to Infinity (numbers between or not) has those
    extremes: it answered null min and max, a gap where data was."""
    status, me = api.get("/api/v1/viewer")
    base = P.format(e=me["entity"])
    run = _run_with_writer(api, base, "inf-buckets")
    values = ["-Infinity", 3.0, "Infinity", 5.0, "-Infinity", "Infinity"]
    rows = [{"step": i, "time": 1000 + i, "values": {"x": v}} for i, v in enumerate(values)]
    status, body = api.post(f"{base}/{run}/writers/w/batches", {"seq": 1, "history": rows})
    assert status == 200, body
    stats = {}
    for buckets in (1, 3):
        status, body = api.get(f"{base}/{run}/history?keys=x&buckets={buckets}")
        assert status == 200, body
        stats[buckets] = [(b["count"], b["min"], b["max"], b["mean"])
                          for b in body["series"][0]["buckets"]]
    assert stats[1] == [(6, "-Infinity", "Infinity", None)]
    assert stats[3] == [(2, "-Infinity", 3.0, None), (2, 5.0, "Infinity", None),
                        (2, "-Infinity", "Infinity", None)]  # infinities alone: still extremes


def test_project_level_reads_answer_several_runs_at_once(api):
    """GET /api/v1/series|history|system/{entity}/{project}?runs=...: one request for the web
    UI's charts of many runs; each series names its run; runs that do not exist are listed."""
    status, me = api.get("/api/v1/viewer")
    base = P.format(e=me["entity"])
    a = _run_with_writer(api, base, "multi-a")
    b = _run_with_writer(api, base, "multi-b", label="rank_1")
    for run, label, k in ((a, "w", 1.0), (b, "rank_1", 10.0)):
        rows = [{"step": s, "time": 1000 + s, "values": {"loss": k * s, "acc": s}} for s in range(10)]
        system = [{"time": 1000 + s, "values": {"gpu.0.temp": 50 + s + k}} for s in range(3)]
        status, body = api.post(f"{base}/{run}/writers/{label}/batches", {"seq": 1, "history": rows, "system": system})
        assert status == 200, body
    project = f"{me['entity']}/proj"

    status, body = api.get(f"/api/v1/series/{project}?runs={a},{b},gone1")
    assert status == 200, body
    assert body["missing"] == ["gone1"]
    keys = {r["run"]: sorted((k["key"], k["writer"]) for k in r["keys"]) for r in body["runs"]}
    assert keys[a] == [("acc", "w"), ("loss", "w"), ("system/gpu.0.temp", "w")]
    assert keys[b] == [("acc", "rank_1"), ("loss", "rank_1"), ("system/gpu.0.temp", "rank_1")]

    status, body = api.get(f"/api/v1/history/{project}?runs={a},{b}&keys=loss&buckets=2&min_step=0&max_step=9")
    assert status == 200, body
    got = {(s["run"], s["key"], s["writer"]): s["buckets"] for s in body["series"]}
    assert set(got) == {(a, "loss", "w"), (b, "loss", "rank_1")}
    assert [x["max"] for x in got[(b, "loss", "rank_1")]] == [40.0, 90.0]
    assert body["missing"] == []
    # Raw points and the same answer as the run's own route.
    status, body = api.get(f"/api/v1/history/{project}?runs={a}&keys=acc")
    status, own = api.get(f"{base}/{a}/history?keys=acc")
    assert body["series"][0]["points"] == own["series"][0]["points"]
    # System metrics: keys without their prefix; every system key when none is named.
    status, body = api.get(f"/api/v1/system/{project}?runs={a},{b}&keys=gpu.0.temp&buckets=1")
    assert status == 200, body
    assert sorted((s["run"], s["key"]) for s in body["series"]) == sorted([(a, "gpu.0.temp"), (b, "gpu.0.temp")])
    status, body = api.get(f"/api/v1/system/{project}?runs={a},{b}&buckets=1")
    assert sorted((s["run"], s["key"], s["buckets"][0]["min"]) for s in body["series"]) == sorted(
        [(a, "gpu.0.temp", 51.0), (b, "gpu.0.temp", 60.0)])

    status, body = api.get(f"/api/v1/history/{project}")
    assert status == 400 and "runs" in body["error"]["message"]
    many = ",".join(f"r{i}" for i in range(201))
    status, body = api.get(f"/api/v1/history/{project}?runs={many}")
    assert status == 400 and "at most 200" in body["error"]["message"]
    status, body = api.get(f"/api/v1/history/{project}?runs=a/b")
    assert status == 400 and "invalid run id" in body["error"]["message"]


def test_a_key_logged_again_at_a_step_reads_back_as_one_row_with_the_later_value(api):
    """A client that flushed a step's row and then logged a key again at that step (the SDK's
    timer flush falls between two run.log calls of one step) sends the step twice; the history
    holds one value per key and step, the later one, and the other keys of the step stay."""
    status, me = api.get("/api/v1/viewer")
    base = P.format(e=me["entity"])
    path = f"{base}/{_run_with_writer(api, base, 'relog')}"
    batches = [[{"step": 3, "time": 1, "values": {"a": 1, "b": 1}}],
               [{"step": 3, "time": 2, "values": {"a": 2}},
                {"step": 4, "time": 3, "values": {"a": 4, "b": 4}}]]
    for seq, rows in enumerate(batches, 1):
        status, body = api.post(f"{path}/writers/w/batches", {"seq": seq, "history": rows})
        assert status == 200, body
    status, body = api.get(f"{path}/history?keys=a,b")
    assert status == 200, body
    got = {s["key"]: [(p[0], p[2]) for p in s["points"]] for s in body["series"]}
    assert got == {"a": [(3, 2), (4, 4)], "b": [(3, 1), (4, 4)]}, got


def test_an_answer_past_the_servers_point_bound_is_refused_whole(tmp_path):
    """`limit` and `buckets` are per series: every key of every writer of a large job built
    billions of points in memory. Past --max-answer-points the read is a 413 naming it."""
    from conftest import ServerProcess
    s = ServerProcess(tmp_path, ["--max-answer-points", "50"]).start()
    try:
        api = s.api()
        status, me = api.get("/api/v1/viewer")
        base = P.format(e=me["entity"])
        runs = [_run_with_writer(api, base, f"bound-{n}") for n in range(3)]
        for run in runs:
            rows = [{"step": i, "time": 1000 + i, "values": {f"k{j}": i * j for j in range(10)}}
                    for i in range(10)]
            status, body = api.post(f"{base}/{run}/writers/w/batches", {"seq": 1, "history": rows})
            assert status == 200, body
        status, err = api.get(f"{base}/{runs[0]}/history")  # 10 keys x 10 points
        assert status == 413 and "--max-answer-points" in err["error"]["message"], err
        status, body = api.get(f"{base}/{runs[0]}/history?keys=k1,k2,k3")
        assert status == 200 and sum(len(x["points"]) for x in body["series"]) == 30
        status, body = api.get(f"{base}/{runs[0]}/history?buckets=5")  # 10 keys x 5 buckets
        assert status == 200 and sum(len(x["buckets"]) for x in body["series"]) == 50
        project = f"/api/v1/history/{me['entity']}/proj"
        status, body = api.get(f"{project}?runs={','.join(runs[:2])}&keys=k1,k2")  # 40 points
        assert status == 200 and len(body["series"]) == 4, body
        status, err = api.get(f"{project}?runs={','.join(runs)}&keys=k1,k2")  # 60 points
        assert status == 413, err
    finally:
        s.stop()
