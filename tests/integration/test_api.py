"""The HTTP API of the real `cohort server` binary over a real socket (docs/api.md)."""
import json
import math
import subprocess
import time
import urllib.parse

from conftest import COHORT_BIN, Api, project_version, wait_for

P = "/api/v1/runs/{e}/proj"


def runs_path(api):
    return P.format(e=entity(api))


def entity(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200
    return me["entity"]


def make_run(api, **fields):
    status, run = api.post(runs_path(api), fields)
    assert status in (200, 201), run
    return run


def join(api, run, label, **kw):
    status, w = api.post(f"{runs_path(api)}/{run['id']}/writers", dict(label=label, **kw))
    assert status in (200, 201), w
    return w


def ingest(api, run, label, body):
    return api.post(f"{runs_path(api)}/{run['id']}/writers/{label}/batches", body)


def history(api, run, **params):
    q = urllib.parse.urlencode(params)
    status, body = api.get(f"{runs_path(api)}/{run['id']}/history?{q}")
    assert status == 200, body
    return body["series"]


def test_healthz_answers_without_key(server):
    status, body = Api(server.url, "").get("/healthz")
    assert status == 200 and body["status"] == "ok"


def test_healthz_and_cli_report_the_project_version(server):
    status, body = Api(server.url, "").get("/healthz")
    assert status == 200 and body["version"] == project_version()
    out = subprocess.run([str(COHORT_BIN), "--version"], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "cohort " + project_version()


def test_first_start_writes_admin_key_to_private_config(server):
    cfg_path = server.home / ".config" / "cohort" / "config.json"
    assert oct(cfg_path.stat().st_mode & 0o777) == "0o600"
    assert server.config["base_url"] == server.url
    assert server.config["api_key"].startswith("ck_")


def test_missing_key_is_401_with_json_error(server):
    status, body = Api(server.url, "").get("/api/v1/viewer")
    assert status == 401
    assert body["error"]["code"] == "unauthenticated"


def test_wrong_key_is_401(server):
    status, _ = Api(server.url, "ck_" + "0" * 40).get("/api/v1/viewer")
    assert status == 401


def test_basic_auth_form_is_accepted(server):
    import base64
    key = server.config["api_key"]
    token = base64.b64encode(f"api:{key}".encode()).decode()
    status, body = Api(server.url, "").get("/api/v1/viewer", headers={"Authorization": "Basic " + token})
    assert status == 200 and body["role"] == "admin"


def test_create_run_makes_base36_id_and_resume_keeps_it(api):
    run = make_run(api, name="first", group="DDP", job_type="main", config={"lr": 0.1})
    assert len(run["id"]) == 8 and run["id"].isalnum() and run["id"].lower() == run["id"]
    assert run["state"] == "pending"
    status, again = api.post(runs_path(api), {"id": run["id"], "config": {"bs": 32}})
    assert status == 200
    assert again["config"] == {"lr": 0.1, "bs": 32}
    assert again["group"] == "DDP"


def test_resume_never_on_existing_run_is_409(api):
    run = make_run(api, id="fixed-id")
    status, body = api.post(runs_path(api), {"id": run["id"], "resume": "never"})
    assert status == 409 and body["error"]["code"] == "already_exists"


def test_resume_never_raced_creates_once_and_refuses_the_others(api):
    # The check ran before the upsert: two creates of one id both passed it, and the second
    # resumed the first's run, renamed it and answered 200.
    import concurrent.futures
    import threading
    for n in range(10):
        run_id = f"race-{n}"
        gate = threading.Barrier(6)

        def create(i):
            gate.wait()
            return i, api.post(runs_path(api), {"id": run_id, "resume": "never",
                                                "name": f"by-{i}"})[0]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            results = dict(pool.map(create, range(6)))
        winners = [i for i, status in results.items() if status == 201]
        assert len(winners) == 1 and sorted(results.values()) == [201] + [409] * 5, results
        status, run = api.get(f"{runs_path(api)}/{run_id}")
        assert status == 200 and run["name"] == f"by-{winners[0]}", run


def test_resume_must_on_missing_run_is_404(api):
    status, body = api.post(runs_path(api), {"id": "nope", "resume": "must"})
    assert status == 404


def test_patch_refuses_more_tags_than_a_create_may_have(api):
    # POST refused more than 256 tags; PATCH stored them all.
    run = make_run(api, tags=["keep"])
    status, body = api.patch(f"{runs_path(api)}/{run['id']}",
                             {"tags": [f"t{i}" for i in range(257)]})
    assert status == 400 and "tags" in body["error"]["message"], body
    assert api.get(f"{runs_path(api)}/{run['id']}")[1]["tags"] == ["keep"]


def test_an_exit_code_that_is_no_exit_status_is_refused(api):
    # 2^32 wrapped to 0: the writer was marked finished, a clean exit.
    run = make_run(api)
    join(api, run, "rank_0")
    base = f"{runs_path(api)}/{run['id']}"
    for code in (4294967296, -4294967297):
        status, body = api.post(f"{base}/writers/rank_0/finish", {"exit_code": code})
        assert status == 400 and "exit_code" in body["error"]["message"], body
    status, writers = api.get(f"{base}/writers")
    assert [w["state"] for w in writers["writers"]] != ["finished"], writers
    assert all(w.get("exit_code") is None for w in writers["writers"]), writers


def test_patch_merges_config_and_summary_config_nulls_are_values(api):
    run = make_run(api, config={"a": 1, "b": 2, "d": None})
    status, body = api.patch(f"{runs_path(api)}/{run['id']}",
                             {"config": {"b": None, "c": 3}, "summary": {"loss": 0.1, "x": 1},
                              "tags": ["x"]})
    assert status == 200, body
    assert body["config"] == {"a": 1, "b": None, "c": 3, "d": None}
    assert body["summary"] == {"loss": 0.1, "x": 1}
    assert body["tags"] == ["x"]
    status, body = api.patch(f"{runs_path(api)}/{run['id']}",
                             {"config_unset": ["a", "d"], "summary": {"x": None}})
    assert status == 200, body
    assert body["config"] == {"b": None, "c": 3}
    assert body["summary"] == {"loss": 0.1}
    status, body = api.patch(f"{runs_path(api)}/{run['id']}", {"config_unset": "a"})
    assert status == 400 and "config_unset" in body["error"]["message"], body


def test_list_runs_filters_with_not_equal_and_in(api):
    for i, jt in enumerate(["main", "worker", "worker"]):
        make_run(api, name=f"r{i}", group="G", job_type=jt)
    crashed = make_run(api, name="r3", group="G", job_type="worker")
    join(api, crashed, "rank_3")
    api.post(f"{runs_path(api)}/{crashed['id']}/writers/rank_3/finish", {"exit_code": 1, "state": "crashed"})
    f = json.dumps([{"field": "job_type", "op": "!=", "value": "worker"}])
    status, body = api.get(f"{runs_path(api)}?filters={urllib.parse.quote(f)}")
    assert status == 200
    assert [r["name"] for r in body["runs"]] == ["r0"]
    f = json.dumps([{"field": "job_type", "op": "==", "value": "worker"},
                    {"field": "state", "op": "in", "values": ["crashed"]}])
    status, body = api.get(f"{runs_path(api)}?filters={urllib.parse.quote(f)}")
    assert [r["name"] for r in body["runs"]] == ["r3"]
    status, body = api.get(f"{runs_path(api)}?state=crashed,failed&group=G")
    assert body["total"] == 1


def test_list_runs_pages_with_cursor_without_gaps(api):
    names = {f"p{i:02d}" for i in range(25)}
    for n in sorted(names):
        make_run(api, name=n)
    seen, cursor = [], None
    while True:
        q = "?sort=name&limit=7" + (f"&cursor={urllib.parse.quote(cursor)}" if cursor else "")
        status, body = api.get(runs_path(api) + q)
        assert status == 200, body
        assert body["total"] == 25
        seen += [r["name"] for r in body["runs"]]
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert seen == sorted(names)


def test_list_runs_sorts_by_summary_key_numbers_then_nan_strings_missing(api):
    # One project of its own: the values of summary.loss, by run name.
    path = f"/api/v1/runs/{entity(api)}/sortproj"
    values = {"a": 0.5, "b": 2, "c": "abc", "d": None, "e": -1.5, "f": "Infinity", "g": "NaN",
              "h": 2, "i": "Abc", "j": True}
    for name, v in values.items():
        status, run = api.post(path, {"name": name, "config": {"opt": {"lr": v}}})
        assert status in (200, 201), run
        if v is not None:
            status, body = api.patch(f"{path}/{run['id']}", {"summary": {"loss": v}})
            assert status == 200, body

    def listed(sort, limit):
        seen, cursor = [], None
        while True:
            q = f"?sort={sort}&limit={limit}" + (
                f"&cursor={urllib.parse.quote(cursor)}" if cursor else "")
            status, body = api.get(path + q)
            assert status == 200, body
            assert body["total"] == len(values)
            seen += [r["name"] for r in body["runs"]]
            cursor = body["next_cursor"]
            if not cursor:
                return seen

    ascending = ["e", "a", "j", "b", "h", "f", "g", "i", "c", "d"]
    descending = ["f", "h", "b", "j", "a", "e", "g", "c", "i", "d"]
    for key in ("summary.loss", "config.opt.lr"):
        for limit in (2, 100):
            assert listed(key, limit) == ascending, (key, limit)
            assert listed("-" + key, limit) == descending, (key, limit)
    # A cursor is for its own sort only.
    status, body = api.get(path + "?sort=summary.loss&limit=2")
    cursor = urllib.parse.quote(body["next_cursor"])
    status, body = api.get(path + f"?sort=summary.acc&limit=2&cursor={cursor}")
    assert status == 400 and "cursor" in body["error"]["message"]
    for bad in ("summary.", "config.a..b"):
        status, body = api.get(path + "?sort=" + urllib.parse.quote(bad))
        assert status == 400 and bad in body["error"]["message"], body


def test_unknown_sort_field_is_400_naming_it(api):
    status, body = api.get(runs_path(api) + "?sort=bogus")
    assert status == 400 and "sort" in body["error"]["message"]
    assert "bogus" in body["error"]["message"]


def test_groups_list_counts_and_states(api):
    a = make_run(api, group="DDP", job_type="main")
    make_run(api, group="DDP", job_type="worker")
    make_run(api, group="other")
    join(api, a, "rank_0")
    status, body = api.get(f"/api/v1/groups/{entity(api)}/proj")
    assert status == 200
    ddp = next(g for g in body["groups"] if g["group"] == "DDP")
    assert ddp["runs"] == 2
    assert ddp["job_types"] == {"main": 1, "worker": 1}
    assert ddp["states"].get("running") == 1


def test_shared_run_follows_primary_not_workers(api):
    run = make_run(api)
    w = join(api, run, "rank_0", primary=True)
    # The join says the server's media limits (the defaults here), for the SDK's checks.
    assert w["media_limits"] == {"max_media_file_bytes": 64 << 20, "max_media_per_step": 1024}
    join(api, run, "rank_1", primary=False, update_finish_state=False)
    base = f"{runs_path(api)}/{run['id']}"
    api.post(f"{base}/writers/rank_1/finish", {"exit_code": 0})
    assert api.get(base)[1]["state"] == "running"
    api.post(f"{base}/writers/rank_0/finish", {"exit_code": 3})
    body = api.get(base)[1]
    assert body["state"] == "failed" and body["exit_code"] == 3
    states = {w["label"]: w["state"] for w in body["writers"]}
    assert states == {"rank_0": "failed", "rank_1": "finished"}


def test_ingest_retry_with_same_seq_is_stored_once(api):
    run = make_run(api)
    join(api, run, "w")
    batch = {"seq": 1, "history": [{"step": i, "time": 1000 + i, "values": {"loss": i * 0.5}} for i in range(10)]}
    s1, r1 = ingest(api, run, "w", batch)
    s2, r2 = ingest(api, run, "w", batch)
    assert (s1, r1["duplicate"], r1["points"]) == (200, False, 10)
    assert (s2, r2["duplicate"]) == (200, True)
    pts = history(api, run, keys="loss")[0]["points"]
    assert len(pts) == 10


def test_two_writers_at_same_step_never_overwrite(api):
    run = make_run(api)
    for label, v in (("rank_3", 3.0), ("rank_5", 5.0)):
        join(api, run, label)
        ingest(api, run, label, {"seq": 1, "history": [{"step": 100, "time": 1, "values": {"loss": v}}]})
    series = {s["writer"]: s["points"] for s in history(api, run, keys="loss")}
    assert series == {"rank_3": [[100, 1, 3.0]], "rank_5": [[100, 1, 5.0]]}


def test_server_assigns_steps_per_writer_across_batches(api):
    run = make_run(api)
    join(api, run, "w")
    for seq in (1, 2):
        status, body = ingest(api, run, "w", {"seq": seq, "history": [
            {"time": 5, "values": {"x": 1}}, {"time": 6, "values": {"x": 2}}]})
        assert status == 200
    assert body["next_step"] == 4
    assert [p[0] for p in history(api, run, keys="x")[0]["points"]] == [0, 1, 2, 3]


def test_non_finite_values_round_trip_as_strings(api):
    run = make_run(api)
    join(api, run, "w")
    ingest(api, run, "w", {"seq": 1, "history": [
        {"step": 0, "time": 1, "values": {"v": "NaN"}},
        {"step": 1, "time": 1, "values": {"v": "Infinity"}},
        {"step": 2, "time": 1, "values": {"v": "-Infinity"}},
        {"step": 3, "time": 1, "values": {"v": -0.0}}]})
    pts = history(api, run, keys="v")[0]["points"]
    assert [p[2] for p in pts[:3]] == ["NaN", "Infinity", "-Infinity"]
    assert math.copysign(1, pts[3][2]) == -1


def test_history_buckets_give_exact_extremes(api):
    run = make_run(api)
    join(api, run, "w")
    values = [math.sin(i / 50.0) for i in range(20000)]
    values[12345] = 99.0
    for seq, start in enumerate(range(0, 20000, 5000), start=1):
        rows = [{"step": i, "time": i, "values": {"y": values[i]}} for i in range(start, start + 5000)]
        assert ingest(api, run, "w", {"seq": seq, "history": rows})[0] == 200
    buckets = history(api, run, keys="y", buckets=100)[0]["buckets"]
    assert 90 <= len(buckets) <= 100
    assert sum(b["count"] for b in buckets) == 20000
    assert max(b["max"] for b in buckets) == 99.0
    assert abs(min(b["min"] for b in buckets) - min(values)) < 1e-12
    ranged = history(api, run, keys="y", min_step=12000, max_step=12999)[0]["points"]
    assert len(ranged) == 1000 and ranged[0][0] == 12000


def test_raw_history_pages_with_after_step(api):
    run = make_run(api)
    join(api, run, "w")
    ingest(api, run, "w", {"seq": 1, "history": [{"step": i, "time": i, "values": {"k": i}} for i in range(250)]})
    got, after = [], None
    while True:
        params = {"keys": "k", "limit": 100}
        if after is not None:
            params["after_step"] = after
        s = history(api, run, **params)[0]
        got += [p[0] for p in s["points"]]
        if not s["more"]:
            break
        after = s["points"][-1][0]
    assert got == list(range(250))


def test_system_metrics_are_per_label_and_hidden_from_history(api):
    run = make_run(api)
    for label, temp in (("rank_0", 60), ("rank_1", 70)):
        join(api, run, label)
        ingest(api, run, label, {"seq": 1, "system": [{"time": 1000, "values": {"gpu.0.temp": temp}}],
                                 "history": [{"step": 0, "time": 1000, "values": {"loss": 1}}]})
    assert {s["key"] for s in history(api, run)} == {"loss"}
    status, body = api.get(f"{runs_path(api)}/{run['id']}/system?labels=rank_1")
    assert status == 200
    assert [(s["key"], s["writer"], s["points"][0][2]) for s in body["series"]] == [("gpu.0.temp", "rank_1", 70)]


def test_console_filters_by_label_stream_and_text(api):
    run = make_run(api)
    for label in ("rank_0", "rank_1"):
        join(api, run, label)
        ingest(api, run, label, {"seq": 1, "console": [
            {"time": 1, "stream": "stdout", "text": f"{label} epoch 1"},
            {"time": 2, "stream": "stderr", "text": f"{label} warning"}]})
    base = f"{runs_path(api)}/{run['id']}/console"
    _, body = api.get(base + "?labels=rank_1")
    assert [l["text"] for l in body["lines"]] == ["rank_1 epoch 1", "rank_1 warning"]
    _, body = api.get(base + "?stream=stderr&q=warning")
    assert {l["label"] for l in body["lines"]} == {"rank_0", "rank_1"}
    _, body = api.get(base + "?limit=1")
    first = body["lines"][0]["id"]
    _, body2 = api.get(base + f"?after={body['next_cursor']}&limit=10")
    assert first not in [l["id"] for l in body2["lines"]] and len(body2["lines"]) == 3


def test_views_crud(api):
    base = f"/api/v1/views/{entity(api)}/proj"
    spec = {"filters": [{"field": "job_type", "op": "!=", "value": "worker"}], "group_by": "group"}
    status, v = api.post(base, {"name": "default: hide workers", "spec": spec})
    assert status == 201 and v["spec"] == spec
    status, v2 = api.put(f"{base}/{v['id']}", {"name": "renamed", "spec": {}})
    assert status == 200 and v2["name"] == "renamed"
    assert [x["name"] for x in api.get(base)[1]["views"]] == ["renamed"]
    # Two edits of the version loaded: the second is refused (409), not applied over the first.
    mine = {"name": "renamed", "spec": {"sort": "name"}, "updated_ms": v2["updated_ms"]}
    theirs = {"name": "renamed", "spec": {"group_by": "job_type"}, "updated_ms": v2["updated_ms"]}
    status, v3 = api.put(f"{base}/{v['id']}", mine)
    assert status == 200 and v3["updated_ms"] > v2["updated_ms"], v3
    status, body = api.put(f"{base}/{v['id']}", theirs)
    assert status == 409 and "load the view again" in body["error"]["message"], body
    assert api.get(base)[1]["views"][0]["spec"] == {"sort": "name"}
    assert api.put(f"{base}/{v['id']}", {**theirs, "updated_ms": -1})[0] == 400
    assert api.delete(f"{base}/{v['id']}")[0] == 200
    assert api.get(base)[1]["views"] == []
    assert api.delete(f"{base}/{v['id']}")[0] == 404


def test_views_are_bounded_in_size_count_and_name(api):
    # A listing answers every view of a project: views of 30 MiB each made one GET build 335 MB.
    base = f"/api/v1/views/{entity(api)}/bounded"
    status, err = api.post(base, {"name": "big", "spec": {"notes": "x" * (64 << 10)}})
    assert status == 413 and "spec" in err["error"]["message"], err
    status, err = api.post(base, {"name": "ctl\u0001\n", "spec": {}})
    assert status == 400 and "control characters" in err["error"]["message"], err
    status, v = api.post(base, {"name": "ok", "spec": {"notes": "x" * 1000}})
    assert status == 201, v
    status, err = api.put(f"{base}/{v['id']}", {"name": "ok", "spec": {"notes": "x" * (64 << 10)}})
    assert status == 413, err
    for n in range(1, 500):
        status, body = api.post(base, {"name": f"v{n}", "spec": {}})
        assert status == 201, (n, body)
    status, err = api.post(base, {"name": "one too many", "spec": {}})
    assert status == 409 and "500" in err["error"]["message"], err
    views = api.get(base)[1]["views"]
    assert len(views) == 500 and "one too many" not in [x["name"] for x in views]
    assert [x for x in views if x["name"] == "ok"][0]["spec"] == {"notes": "x" * 1000}


def test_metrics_exposes_requests_and_ingest(api, server):
    run = make_run(api)
    join(api, run, "w")
    ingest(api, run, "w", {"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1, "b": 2}}]})
    status, text = Api(server.url, "").get("/metrics")
    assert status == 200
    assert "cohort_ingest_points_total 2" in text
    assert 'cohort_http_requests_total{route="/api/v1/runs/{entity}/{project}",method="POST",status="201"}' in text
    assert "cohort_http_connections_open" in text


def test_heartbeat_timeout_marks_writer_and_run_crashed(tmp_path):
    from conftest import ServerProcess
    s = ServerProcess(tmp_path, ["--heartbeat-timeout", "1", "--sweep-interval", "1"]).start()
    try:
        api = s.api()
        run = make_run(api)
        join(api, run, "rank_0")
        base = f"{runs_path(api)}/{run['id']}"
        body = wait_for(lambda: (lambda b: b if b["state"] == "crashed" else None)(api.get(base)[1]), timeout=8)
        assert body and body["writers"][0]["state"] == "crashed"
    finally:
        s.stop()


def test_data_survives_server_restart(tmp_path):
    from conftest import ServerProcess
    s = ServerProcess(tmp_path).start()
    api = s.api()
    run = make_run(api, name="durable")
    join(api, run, "w")
    ingest(api, run, "w", {"seq": 1, "history": [{"step": i, "time": i, "values": {"m": i}} for i in range(100)]})
    s.stop()
    s2 = ServerProcess(tmp_path).start()
    try:
        api2 = s2.api()
        assert api2.key == api.key
        assert len(history(api2, run, keys="m")[0]["points"]) == 100
    finally:
        s2.stop()


def test_ui_token_exchanges_for_a_working_session_key(server):
    token = server.ui_url.split("token=")[1]
    anon = Api(server.url, "")
    status, body = anon.post("/api/v1/sessions", {"token": token})
    assert status == 201 and body["key"].startswith("cs_")
    status, me = Api(server.url, body["key"]).get("/api/v1/viewer")
    assert status == 200 and me["entity"] == server.api().get("/api/v1/viewer")[1]["entity"]


def test_wrong_ui_token_is_401(server):
    status, body = Api(server.url, "").post("/api/v1/sessions", {"token": "0" * 32})
    assert status == 401 and body["error"]["code"] == "unauthenticated"


def test_history_time_range_and_multiple_keys_and_writers(api):
    run = make_run(api)
    for label in ("rank_0", "rank_1", "rank_2"):
        join(api, run, label)
        ingest(api, run, label, {"seq": 1, "history": [
            {"step": i, "time": 1000 + 10 * i, "values": {"loss": i, "acc": -i, "lr": 0.1}} for i in range(100)]})
    series = history(api, run, keys="loss,acc", writers="rank_0,rank_2", min_time=1200, max_time=1290)
    assert sorted((s["key"], s["writer"]) for s in series) == [
        ("acc", "rank_0"), ("acc", "rank_2"), ("loss", "rank_0"), ("loss", "rank_2")]
    for s in series:
        assert [p[0] for p in s["points"]] == list(range(20, 30))
    status, keys = api.get(f"{runs_path(api)}/{run['id']}/keys")
    assert status == 200
    assert len(keys["keys"]) == 9 and all(k["count"] == 100 for k in keys["keys"])
