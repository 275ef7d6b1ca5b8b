"""Checks of the rank-insight routes shared by the SQLite (tests/distributed/test_stragglers.py)
and PostgreSQL (tests/postgres/test_ranks_on_postgres.py) suites: data ingested through the HTTP
API, answers compared with values computed here."""
import urllib.parse


def get(api, path, **query):
    status, body = api.get(path + "?" + urllib.parse.urlencode(query))
    assert status == 200, (path, query, status, body)
    return body


def ingest(api, entity, project, run_id, group, label, points, seq=1, batch=None):
    """Creates the run (in `group`) and the writer, then sends (step, time, loss) points in
    batches of `batch` rows (all at once by default)."""
    status, body = api.post(f"/api/v1/runs/{entity}/{project}", {"id": run_id, "group": group,
                                                                 "name": run_id})
    assert status in (200, 201), body
    base = f"/api/v1/runs/{entity}/{project}/{run_id}/writers"
    status, body = api.post(base, {"label": label, "host": "node-" + label})
    assert status in (200, 201), body
    batch = batch or len(points)
    for i in range(0, len(points), batch):
        history = [{"step": s, "time": t, "values": {"loss": v}} for s, t, v in points[i:i + batch]]
        status, body = api.post(f"{base}/{label}/batches", {"seq": seq, "history": history})
        assert status == 200, body
        seq += 1


def check_group_aggregate(api, entity, project="grp", batch=None):
    t0 = 1700000000000
    for r in range(4):
        ingest(api, entity, project, f"proc{r}", "job", "main",
               [(s, t0 + 100 * s, float(10 * r + s)) for s in range(3000)], batch=batch)
        ingest(api, entity, project, f"proc{r}", "job", "eval", [(0, t0, -1000.0)])
    ingest(api, entity, project, "other", "not-job", "main", [(0, t0, 1e9)])

    path = f"/api/v1/groups/{entity}/{project}/ranks"
    agg = get(api, path + "/aggregate", group="job", key="loss", writers="main", buckets=2)
    assert [(m["run"], m["writer"]) for m in agg["members"]] == \
        [(f"proc{r}", "main") for r in range(4)]
    assert agg["members"][0]["host"] == "node-main"
    # 3,000 steps in 2 buckets: 1,500 per bucket, rounded up to the chunk size (2,048).
    assert agg["bucket_width"] == 2048 and agg["exact"] is False
    first, second = agg["buckets"]
    assert (first["step_min"], first["step_max"]) == (0, 2047)
    assert (second["step_min"], second["step_max"]) == (2048, 2999)
    assert first["count"] == 4 * 2048 and first["members"] == 4
    assert first["min"] == 0 and first["min_member"] == 0
    assert first["max"] == 30 + 2047 and first["max_member"] == 3
    assert first["mean"] == 15 + 2047 / 2
    assert first["median"] == 15 + 2047 / 2  # member means 1023.5 + 10r
    assert second["min"] == 2048 and second["spread"] == 30 + 2999 - 2048

    # A step range that cuts chunks: buckets are clipped to it, statistics stay exact.
    cut = get(api, path + "/aggregate", group="job", key="loss", writers="main", buckets=3,
              min_step=700, max_step=2500)
    ranges = [(b["step_min"], b["step_max"]) for b in cut["buckets"]]
    assert ranges[0][0] == 700 and ranges[-1][1] == 2500, ranges
    for b in cut["buckets"]:
        lo, hi = b["step_min"], b["step_max"]
        assert b["count"] == 4 * (hi - lo + 1)
        assert b["min"] == lo and b["max"] == 30 + hi
        assert b["mean"] == 15 + (lo + hi) / 2

    # Every writer of the group: the eval writers join as members and hold the minimum.
    every = get(api, path + "/aggregate", group="job", key="loss", max_step=0)
    assert len(every["members"]) == 8
    (b,) = every["buckets"]
    assert b["min"] == -1000 and every["members"][b["min_member"]]["writer"] == "eval"

    # Straggler detection over the group's runs: steps 100 ms apart everywhere, nobody flagged.
    body = get(api, path + "/stragglers", group="job", writers="main")
    assert body["stragglers"] == [] and len(body["members"]) == 4
    assert body["members"][0]["step_time"]["value"] == 100
    assert not body["desync"]["flagged"]


def check_gpu_utilisation(api, entity, project="gpus"):
    """A shared run of 4 writers with GPU samples: the one whose GPU idles is flagged, and the
    heatmap carries utilisation rows."""
    t0 = 1700000000000
    status, body = api.post(f"/api/v1/runs/{entity}/{project}", {"id": "shared"})
    assert status in (200, 201), body
    base = f"/api/v1/runs/{entity}/{project}/shared"
    for r in range(4):
        label = f"rank_{r}"
        status, body = api.post(base + "/writers", {"label": label, "host": f"node{r // 2}"})
        assert status in (200, 201), body
        history = [{"step": s, "time": t0 + 200 * s, "values": {"loss": 1.0 / (s + 1)}}
                   for s in range(60)]
        util = 30.0 if r == 3 else 95.0 + r
        system = [{"time": t0 + 1000 * i, "values": {"gpu.0.gpu": util, "gpu.1.gpu": util + 1,
                                                     "gpu.0.temp": 60.0}}
                  for i in range(12)]
        status, body = api.post(f"{base}/writers/{label}/batches",
                                {"seq": 1, "history": history, "system": system})
        assert status == 200, body
    body = get(api, base + "/ranks/stragglers", columns=6)
    assert [body["members"][i]["writer"] for i in body["stragglers"]] == ["rank_3"], body
    slow = body["members"][3]
    assert slow["gpu_util"]["flagged"] and slow["gpu_util"]["value"] == 30.5, slow
    assert slow["step_time"]["flagged"] is False  # same pace: only the GPU tells
    assert any(r.startswith("gpu_util: ") for r in slow["reasons"])
    assert slow["host"] == "node1"
    rows = body["matrix"]["gpu_util"]
    assert len(rows) == 4 and len(rows[0]) == len(body["matrix"]["times"])
    assert {v for v in rows[3] if v is not None} == {30.5}
    assert {v for v in rows[0] if v is not None} == {95.5}
    # Step time per column: 200 ms per step everywhere.
    cells = {v for row in body["matrix"]["step_time_ms"] for v in row if v is not None}
    assert cells == {200.0}, body["matrix"]


def check_window_of_keys_that_end_apart(api, entity, project="window"):
    """A member's window is each signal key's own last steps: here every member logged
    `perf/throughput` for its first 5 steps only, and one member slowed down in its last 50 of
    2,000 `loss` steps. The window of all keys started at the earliest key's end (step -45), so
    the raw page of `loss` held steps 0-463 and the slowdown was not seen."""
    t0 = 1700000000000
    status, body = api.post(f"/api/v1/runs/{entity}/{project}", {"id": "apart"})
    assert status in (200, 201), body
    base = f"/api/v1/runs/{entity}/{project}/apart"
    for r in range(3):
        label = f"rank_{r}"
        status, body = api.post(base + "/writers", {"label": label})
        assert status in (200, 201), body
        t, history = t0, []
        for s in range(2000):
            t += 400 if (r == 2 and s >= 1950) else 100
            values = {"loss": 1.0 / (s + 1)}
            if s < 5:
                values["perf/throughput"] = 1000.0
            history.append({"step": s, "time": t, "values": values})
        status, body = api.post(f"{base}/writers/{label}/batches", {"seq": 1, "history": history})
        assert status == 200, body
    body = get(api, base + "/ranks/stragglers", key="loss")
    assert [body["members"][i]["writer"] for i in body["stragglers"]] == ["rank_2"], body
