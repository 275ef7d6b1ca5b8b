"""cohort.Api against a real server holding runs written by the real SDK (rb_data)."""
import json
import math
import urllib.request

import pandas as pd
import pytest

import rb_data  # first: puts the SDK on sys.path
from rb_data import api, dataset, rb_client, rb_server  # noqa: F401 (fixtures)

import cohort  # noqa: E402
from rb_data import PLAIN_STEPS, PROJECT, SHARED_RANKS, SHARED_STEPS, shared_loss


def _path(dataset, run_id=None):
    p = f"{dataset['entity']}/{PROJECT}"
    return p if run_id is None else f"{p}/{run_id}"


def test_api_reads_url_and_key_from_the_config_file_like_init(rb_server, dataset, monkeypatch):
    monkeypatch.delenv("COHORT_BASE_URL", raising=False)
    monkeypatch.delenv("COHORT_API_KEY", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(rb_server.home))  # where the server wrote config.json
    api = cohort.Api()
    assert api.base_url == rb_server.config["base_url"].rstrip("/")
    assert api.run(f"{PROJECT}/plain1").id == "plain1"  # entity defaults to the key's


def test_api_environment_wins_over_the_config_file(rb_server, dataset, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no config file at all
    monkeypatch.setenv("COHORT_BASE_URL", rb_server.url + "/")
    monkeypatch.setenv("COHORT_API_KEY", rb_server.config["api_key"])
    assert cohort.Api().run(_path(dataset, "plain1")).state == "finished"


def test_api_without_any_key_raises_auth_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COHORT_API_KEY", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    with pytest.raises(cohort.AuthError, match="no API key"):
        cohort.Api(base_url="http://127.0.0.1:9")


def test_wrong_key_raises_auth_error_with_the_server_message(rb_server, dataset):
    api = cohort.Api(base_url=rb_server.url, api_key="ck_" + "0" * 40)
    with pytest.raises(cohort.AuthError) as e:
        api.run(_path(dataset, "plain1"))
    assert "401" in str(e.value) and e.value.code == "unauthenticated"
    assert isinstance(e.value, cohort.AuthenticationError)


def test_missing_run_raises_not_found_naming_it(api, dataset):
    with pytest.raises(cohort.NotFound) as e:
        api.run(_path(dataset, "nosuchrun"))
    assert "nosuchrun" in str(e.value) and "404" in str(e.value)
    assert isinstance(e.value, LookupError) and e.value.code == "not_found"


def test_bad_run_path_raises_usage_error(api):
    with pytest.raises(cohort.UsageError, match="entity/project/run_id"):
        api.run("a/b/c/d")


def test_unreachable_server_raises_comm_error():
    api = cohort.Api(base_url="http://127.0.0.1:9", api_key="ck_x")
    with pytest.raises(cohort.CommError, match="cannot reach"):
        api.run("e/p/r")


def test_unknown_filter_field_raises_usage_error_from_the_server(api, dataset):
    with pytest.raises(cohort.UsageError, match="unknown field 'colour'"):
        list(api.runs(_path(dataset), filters={"colour": "red"}))


def test_unknown_filter_operator_raises_usage_error(api, dataset):
    with pytest.raises(cohort.UsageError, match=r"unknown operator '\$near'"):
        api.runs(_path(dataset), filters={"config.lr": {"$near": 1}})


def test_run_attributes_of_a_plain_run(api, dataset):
    run = api.run(_path(dataset, "plain1"))
    assert (run.name, run.group, run.job_type, run.state) == ("plain one", "G1", "train",
                                                              "finished")
    assert run.tags == ["baseline"]
    assert run.config == {"lr": 0.1, "optim": {"name": "adam"}}
    assert run.summary["acc"] == 0.9
    assert [w["state"] for w in run.writers] == ["finished"]
    assert not run.shared


def test_run_attributes_of_a_shared_run(api, dataset):
    run = api.run(_path(dataset, "ddp1"))
    assert run.shared and run.writer_count == SHARED_RANKS
    assert sorted(w["label"] for w in run.writers) == [f"rank_{r}" for r in range(SHARED_RANKS)]
    assert [w["label"] for w in run.writers if w["primary"]] == ["rank_0"]
    assert run.config == {"world_size": SHARED_RANKS}
    assert run.group == "DDP" and run.job_type == "ddp"


def test_failed_run_state_and_exit_code(api, dataset):
    run = api.run(_path(dataset, "failed1"))
    assert run.state == "failed" and run.exit_code == 3


@pytest.mark.parametrize("filters,expected", [
    ({"group": "G1"}, {"plain1", "failed1"}),
    ({"group": "DDP"}, {"ddp1", "ddp2"}),
    ({"job_type": "eval"}, {"failed1"}),
    ({"job_type": {"$ne": "ddp"}}, {"plain1", "failed1"}),
    ({"state": ["failed", "crashed"]}, {"failed1"}),
    ({"state": "finished", "group": "G1"}, {"plain1"}),
    ({"tags": "baseline"}, {"plain1"}),
    ({"config.lr": 0.1}, {"plain1"}),
    ({"config.lr": {"$lt": 0.05}}, {"failed1"}),
    ({"config.optim.name": "adam"}, {"plain1"}),
    ({"summary.acc": {"$gt": 0.6}}, {"plain1"}),
    ({"$and": [{"group": "G1"}, {"summary.acc": {"$lt": 0.6}}]}, {"failed1"}),
    ([{"field": "job_type", "op": "in", "values": ["train", "eval"]}], {"plain1", "failed1"}),
])
def test_runs_filter_language(api, dataset, filters, expected):
    runs = api.runs(_path(dataset), filters=filters)
    assert {r.id for r in runs} == expected
    assert len(runs) == len(expected)


def test_runs_order_by_name_ascending_and_descending(api, dataset):
    names = [r.name for r in api.runs(_path(dataset), filters={"group": "G1"}, order="+name")]
    assert names == ["failed one", "plain one"]
    names = [r.name for r in api.runs(_path(dataset), filters={"group": "G1"}, order="-name")]
    assert names == ["plain one", "failed one"]


def test_runs_as_a_dataframe_with_flattened_config_and_summary_columns(api, dataset):
    runs = api.runs(_path(dataset), filters={"group": "G1"}, order="+name")
    df = runs.to_dataframe()
    assert list(df["id"]) == ["failed1", "plain1"]  # the sequence's order
    assert list(df.columns[:5]) == ["id", "name", "group", "job_type", "state"]
    assert list(df["state"]) == ["failed", "finished"] and df["exit_code"][0] == 3
    assert list(df["config.lr"]) == [0.01, 0.1]
    assert df["config.optim.name"][1] == "adam" and pd.isna(df["config.optim.name"][0])
    assert list(df["summary.acc"]) == [0.5, 0.9]
    assert df["tags"][1] == ["baseline"]
    # Numbers stay numbers, so that the frame filters and sorts as the workspace does.
    assert df[df["summary.acc"] > 0.6]["id"].tolist() == ["plain1"]
    assert [c for c in df.columns if c.startswith(("config.", "summary."))] == sorted(
        c for c in df.columns if c.startswith(("config.", "summary.")))
    bare = runs.to_dataframe(config=False, summary=False)
    assert not [c for c in bare.columns if c.startswith(("config.", "summary."))]
    empty = api.runs(_path(dataset), filters={"group": "nope"}).to_dataframe()
    assert len(empty) == 0 and "id" in empty.columns


def test_runs_dataframe_from_columns_equals_the_one_from_json(rb_server, api, dataset,
                                                              monkeypatch):
    """The listing's columnar answer (docs/formats.md "Run list columns") gives the same frame as
    the JSON rows, over pages whose fields differ: ints, floats, strings, booleans, nested
    objects, lists, nulls, "NaN", an empty config, a field only some runs have, a running run
    without an exit code."""
    from cohort import api_columns
    entity = dataset["entity"]
    key = rb_server.config["api_key"]
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}

    def call(method, path, body):
        req = urllib.request.Request(f"{rb_server.url}{path}", method=method,
                                     data=json.dumps(body).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status in (200, 201)
    configs = [
        {"lr": 0.1, "layers": 3, "opt": {"name": "adam", "beta": [0.9, 0.99]}, "big": 2 ** 62},
        {"lr": 1, "layers": 4, "opt": {"name": "sgd"}, "flag": True, "note": None},
        {},
        {"lr": 0.5, "mixed": "x", "flag": False, "only": {"deep": {"er": 7}}},
        {"lr": 0.25, "mixed": 3, "layers": 5},
    ]
    summaries = [{"acc": 0.5, "loss": "NaN"}, {"acc": 0.75}, {}, {"acc": 0.9, "loss": 0.1},
                 {"acc": 1, "loss": 0.2, "empty": {}}]
    for i, (config, summary) in enumerate(zip(configs, summaries)):
        call("POST", f"/api/v1/runs/{entity}/cols", {"id": f"c{i}", "name": f"run {i}",
                                                     "config": config, "tags": [f"t{i}"]})
        if summary:
            call("PATCH", f"/api/v1/runs/{entity}/cols/c{i}", {"summary": summary})
    for per_page in (2, 100):  # pages whose columns differ, and one page
        runs = api.runs(f"{entity}/cols", order="name", per_page=per_page)
        got = runs.to_dataframe()
        monkeypatch.setattr(api_columns, "available", lambda: False)
        want = api.runs(f"{entity}/cols", order="name", per_page=per_page).to_dataframe()
        bare = api.runs(f"{entity}/cols", order="name", per_page=per_page).to_dataframe(
            config=False)
        monkeypatch.undo()
        # runtime_ms of a running run grows between the two reads.
        assert got["runtime_ms"].dtype == want["runtime_ms"].dtype == "int64"
        pd.testing.assert_frame_equal(got.drop(columns="runtime_ms"),
                                      want.drop(columns="runtime_ms"))
        assert list(got["id"]) == [f"c{i}" for i in range(5)]
        assert got["config.big"][0] == 2 ** 62 and got["config.opt.beta"][0] == [0.9, 0.99]
        # "NaN" reads as a float (a number column); an empty config adds no "config" column.
        assert math.isnan(got["summary.loss"][0]) and got["summary.loss"].dtype == "float64"
        assert "config" not in got.columns and "summary" not in got.columns
        assert got["summary.empty"][4] == {}  # a nested empty object stays
        pd.testing.assert_frame_equal(
            api.runs(f"{entity}/cols", order="name", per_page=per_page).to_dataframe(
                config=False).drop(columns="runtime_ms"), bare.drop(columns="runtime_ms"))
    # The columns are what was asked for: a JSON client gets JSON, a columns one the columns.
    ctype, body = api._t.get_raw(f"/api/v1/runs/{entity}/cols", {"limit": 2}, api_columns.ACCEPT)
    assert ctype == api_columns.MEDIA_TYPE and body[:4] == b"CHCL"
    header, columns = api_columns.decode_table(body)
    assert header["total"] == 5 and header["next_cursor"] and len(columns["id"]) == 2
    damaged = body[:-1] + bytes([body[-1] ^ 1])
    with pytest.raises(cohort.CommError, match="checksum"):
        api_columns.decode_table(damaged)


def test_runs_page_lazily_through_a_thousand_runs(rb_server, api, dataset):
    # 1,050 runs created through the HTTP API (the SDK's init per run would take minutes).
    entity = dataset["entity"]
    key = rb_server.config["api_key"]
    for i in range(1050):
        req = urllib.request.Request(
            f"{rb_server.url}/api/v1/runs/{entity}/many", method="POST",
            data=json.dumps({"id": f"m{i:04d}", "name": f"m{i:04d}",
                             "config": {"i": i}}).encode(),
            headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 201
    runs = api.runs(f"{entity}/many", order="name", per_page=100)
    assert runs.pages_fetched == 0  # nothing fetched before use
    assert len(runs) == 1050 and runs.pages_fetched == 1
    assert runs[150].id == "m0150" and runs.pages_fetched == 2
    ids = [r.id for r in runs]
    assert ids == [f"m{i:04d}" for i in range(1050)]
    assert runs.pages_fetched == 11
    assert runs[-1].config == {"i": 1049}
    big = api.runs(f"{entity}/many", filters={"config.i": {"$gt": 999}}, order="-name",
                   per_page=7)
    assert [r.id for r in big] == [f"m{i:04d}" for i in range(1049, 999, -1)]


def test_runs_order_by_a_summary_or_config_key_passes_through(rb_server, api, dataset):
    entity = dataset["entity"]
    key = rb_server.config["api_key"]

    def call(method, path, body):
        req = urllib.request.Request(
            f"{rb_server.url}/api/v1/runs/{entity}/sorted{path}", method=method,
            data=json.dumps(body).encode(),
            headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status in (200, 201)

    losses = {"s0": 0.3, "s1": "NaN", "s2": 0.1, "s3": None, "s4": 0.2}
    for run_id, loss in losses.items():
        call("POST", "", {"id": run_id, "config": {"lr": {"s0": 3, "s2": 1}.get(run_id, 2)}})
        if loss is not None:
            call("PATCH", f"/{run_id}", {"summary": {"loss": loss}})
    order = lambda o: [r.id for r in api.runs(f"{entity}/sorted", order=o, per_page=2)]
    assert order("summary.loss") == ["s2", "s4", "s0", "s1", "s3"]
    assert order("+summary_metrics.loss") == ["s2", "s4", "s0", "s1", "s3"]  # W&B's spelling
    assert order("-summary.loss") == ["s0", "s4", "s2", "s1", "s3"]
    assert order("-config.lr") == ["s0", "s4", "s3", "s1", "s2"]  # ties by creation, reversed
    with pytest.raises(cohort.UsageError, match="config.a..b"):
        order("config.a..b")


def test_history_of_a_plain_run_is_exact(api, dataset):
    df = api.run(_path(dataset, "plain1")).history()
    assert list(df.columns) == ["step", "time", "acc", "loss"]
    assert len(df) == PLAIN_STEPS
    assert df["step"].tolist() == list(range(PLAIN_STEPS))
    assert df["loss"].tolist() == [1.0 / (s + 1) for s in range(PLAIN_STEPS)]  # bit-exact
    assert df["acc"].tolist() == [s / 100 for s in range(PLAIN_STEPS)]
    assert (df["time"] > 1_600_000_000_000).all()


def test_a_key_with_a_comma_reads_back(api, dataset):
    run = api.run(_path(dataset, "failed1"))
    df = run.history()
    assert list(df.columns) == ["step", "time", "loss", "odd,key"]
    assert df["odd,key"].tolist() == [-s for s in range(10)]
    assert [r["odd,key"] for r in run.scan_history()] == [-s for s in range(10)]
    named = run.history(keys=["odd,key", "loss"])  # named: escaped in keys= (docs/api.md)
    assert list(named.columns) == ["step", "time", "loss", "odd,key"]
    assert named["odd,key"].tolist() == [-s for s in range(10)]


def test_history_of_a_shared_run_has_a_writer_column(api, dataset):
    df = api.run(_path(dataset, "ddp1")).history(keys=["loss", "val"])
    assert list(df.columns) == ["writer", "step", "time", "loss", "val"]
    assert len(df) == SHARED_RANKS * SHARED_STEPS
    for r in range(SHARED_RANKS):
        mine = df[df["writer"] == f"rank_{r}"]
        assert mine["step"].tolist() == list(range(SHARED_STEPS))
        assert mine["loss"].tolist() == [shared_loss(r, s) for s in range(SHARED_STEPS)]
    val = df[df["writer"] == "rank_0"]["val"]
    assert val.notna().sum() == SHARED_STEPS // 10
    assert df[df["writer"] == "rank_0"].set_index("step")["val"][20] == -20
    assert df[df["writer"] != "rank_0"]["val"].isna().all()


def test_history_writers_selects_writers(api, dataset):
    df = api.run(_path(dataset, "ddp1")).history(keys=["loss"], writers=["rank_2"])
    assert set(df["writer"]) == {"rank_2"} and len(df) == SHARED_STEPS


def test_history_samples_gives_exact_bucket_statistics(api, dataset):
    run = api.run(_path(dataset, "ddp1"))
    df = run.history(keys=["loss"], writers=["rank_1"], samples=10)
    assert list(df.columns) == ["writer", "step", "time", "loss", "loss.min", "loss.max",
                                "loss.mean", "loss.last"]
    assert len(df) == 10
    width = (SHARED_STEPS - 1) // 10 + 1
    for i, row in df.iterrows():
        steps = [s for s in range(SHARED_STEPS) if s // width == i]
        vals = [shared_loss(1, s) for s in steps]
        assert (row["loss.min"], row["loss.max"], row["loss.last"]) == (min(vals), max(vals),
                                                                        vals[-1])
        assert row["loss.mean"] == pytest.approx(sum(vals) / len(vals))
        assert row["step"] == steps[-1]
        assert row["loss"] == vals[-1]  # W&B's plain column: the value logged at that step


def test_history_samples_aligns_sparse_keys_on_the_same_buckets(api, dataset):
    df = api.run(_path(dataset, "ddp1")).history(keys=["loss", "val"], writers=["rank_0"],
                                                 samples=3)
    assert len(df) == 3
    assert df["val.min"].tolist() == [-90, -190, -290]
    assert df["loss.max"].tolist() == [99, 199, 299]


def test_history_x_axis_time_orders_rows_by_time(api, dataset):
    df = api.run(_path(dataset, "ddp1")).history(keys=["loss"], x_axis="time")
    assert df["time"].is_monotonic_increasing
    with pytest.raises(cohort.UsageError, match="x_axis"):
        api.run(_path(dataset, "ddp1")).history(x_axis="epoch")


def test_scan_history_yields_the_same_rows_as_history_in_small_pages(api, dataset):
    run = api.run(_path(dataset, "ddp1"))
    rows = list(run.scan_history(keys=["loss", "val"], page_size=64))
    df = run.history(keys=["loss", "val"])
    assert len(rows) == len(df)
    by = {(r["writer"], r["step"]): r for r in rows}
    for rec in df.to_dict("records"):
        got = by[(rec["writer"], rec["step"])]
        assert got["loss"] == rec["loss"] and got["time"] == rec["time"]
        if math.isnan(rec["val"]):
            assert "val" not in got
        else:
            assert got["val"] == rec["val"]
    writers = [r["writer"] for r in rows]
    assert writers == sorted(writers)  # writer by writer


def test_scan_history_step_range(api, dataset):
    rows = list(api.run(_path(dataset, "plain1")).scan_history(keys=["loss"], min_step=10,
                                                                max_step=19, page_size=3))
    assert [r["step"] for r in rows] == list(range(10, 20))
    assert "writer" not in rows[0]


def test_system_metrics_per_label(api, dataset):
    df = api.run(_path(dataset, "plain1")).system_metrics()
    assert len(df) >= 2, df
    assert "cpu" in df.columns and set(df["label"]) == {api.run(_path(dataset, "plain1"))
                                                        .writers[0]["label"]}
    assert df["time"].is_monotonic_increasing
    assert not any(c.startswith("system/") for c in df.columns)
    assert api.run(_path(dataset, "plain1")).system_metrics(labels=["nobody"]).empty


def test_logs_by_label_and_grep(api, dataset):
    run = api.run(_path(dataset, "ddp1"))
    lines = run.logs(label="rank_2")
    assert [l["text"] for l in lines if l["text"].startswith("rank")] == [
        "rank 2 step 0", "rank 2 step 100", "rank 2 step 200"]
    assert {l["label"] for l in lines} == {"rank_2"}
    hits = run.logs(grep="step 200")
    assert sorted(l["text"] for l in hits) == [f"rank {r} step 200" for r in range(SHARED_RANKS)]
    plain = api.run(_path(dataset, "plain1")).logs(grep="plain line")
    assert [l["text"] for l in plain] == [f"plain line {s}" for s in range(0, PLAIN_STEPS, 10)]


def test_group_lists_its_runs_and_aggregates_across_runs_and_writers(api, dataset):
    group = api.group(_path(dataset), "DDP")
    assert group.run_count == 2 and group.states == {"finished": 2}
    assert {r.id for r in group.runs} == {"ddp1", "ddp2"}
    agg = group.aggregate("loss")  # exact: one row per step, 4 ranks of ddp1 + ddp2
    assert agg["step"].tolist() == list(range(SHARED_STEPS))
    assert agg["members"].tolist() == [SHARED_RANKS + 1] * SHARED_STEPS
    losses = [0, 1000, 2000, 3000, 5000]
    assert agg["mean"].tolist() == [sum(losses) / 5 + s for s in range(SHARED_STEPS)]
    assert agg["median"].tolist() == [2000 + s for s in range(SHARED_STEPS)]
    assert agg["min"].tolist() == list(range(SHARED_STEPS))
    assert agg["max"].tolist() == [5000 + s for s in range(SHARED_STEPS)]
    assert agg["spread"].tolist() == [5000] * SHARED_STEPS


def test_group_aggregate_with_samples_uses_common_buckets(api, dataset):
    agg = api.group(_path(dataset), "DDP").aggregate("loss", samples=3)
    assert agg["step"].tolist() == [0, 100, 200] and agg["step_max"].tolist() == [99, 199, 299]
    assert agg["count"].tolist() == [500, 500, 500] and agg["members"].tolist() == [5, 5, 5]
    assert agg["mean"].tolist() == [2249.5, 2349.5, 2449.5]


def test_run_aggregate_across_the_writers_of_a_shared_run(api, dataset):
    run = api.run(_path(dataset, "ddp1"))
    agg = run.aggregate("loss")
    assert agg["mean"].tolist() == [1500 + s for s in range(SHARED_STEPS)]
    assert agg["members"].tolist() == [SHARED_RANKS] * SHARED_STEPS
    two = run.aggregate("loss", writers=["rank_1", "rank_3"], samples=1)
    assert two["min"].tolist() == [1000] and two["max"].tolist() == [3000 + SHARED_STEPS - 1]
    with pytest.raises(cohort.UsageError, match="samples"):
        run.aggregate("loss", samples=0)


def test_missing_group_raises_not_found(api, dataset):
    with pytest.raises(cohort.NotFound, match="nogroup"):
        api.group(_path(dataset), "nogroup")


def test_export_from_python_to_parquet_and_csv_match_history(api, dataset, tmp_path):
    import pandas as pd

    from cohort.api_export import export_run
    run = api.run(_path(dataset, "ddp1"))
    # Files hold writer by writer, each by step; history() orders by step, then writer.
    expected = run.history().sort_values(["writer", "step"]).reset_index(drop=True)
    rows = export_run(run, str(tmp_path / "r.parquet"), "parquet")
    assert rows == len(expected)
    got = pd.read_parquet(tmp_path / "r.parquet")
    assert list(got.columns) == list(expected.columns)
    assert str(got["time"].dtype).startswith("datetime64") and str(got["time"].dt.tz) == "UTC"
    got["time"] = (got["time"] - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(milliseconds=1)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected, check_dtype=False)
    export_run(run, str(tmp_path / "r.csv"), "csv", keys=["loss"])
    csv_df = pd.read_csv(tmp_path / "r.csv")
    assert len(csv_df) == SHARED_RANKS * SHARED_STEPS
    assert csv_df["loss"].tolist() == expected["loss"].tolist()
    assert not (tmp_path / "r.csv.part").exists()


def test_module_entry_point_exports_parquet(rb_server, dataset, tmp_path):
    import subprocess
    import sys

    import pandas as pd
    env = dict(rb_server.env, COHORT_BASE_URL=rb_server.url,
               COHORT_API_KEY=rb_server.config["api_key"],
               PYTHONPATH=str(rb_data.dist_helpers.ROOT / "python"),
               COHORT_BUILD_DIR=str(rb_data.dist_helpers.BUILD))
    out = tmp_path / "p.parquet"
    proc = subprocess.run([sys.executable, "-m", "cohort", "export", f"{PROJECT}/plain1",
                           "--format", "parquet", "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"exported {PLAIN_STEPS} rows" in proc.stderr
    assert pd.read_parquet(out)["loss"].tolist() == [1.0 / (s + 1) for s in range(PLAIN_STEPS)]
    bad = subprocess.run([sys.executable, "-m", "cohort", "export", f"{PROJECT}/nosuch"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nosuch" in bad.stderr and "404" in bad.stderr


def test_throttled_reads_wait_for_retry_after_and_succeed(tmp_path):
    from conftest import ServerProcess
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"default_tier": "slow", "tiers": {"slow": {
        "requests_per_second": 4, "request_burst": 14, "points_per_second": 0}}}))
    server = ServerProcess(tmp_path / "home", extra_args=["--limits", str(limits)]).start()
    try:
        key = server.config["api_key"]
        entity = server.api().get("/api/v1/viewer")[1]["entity"]
        for i in range(12):
            status, body = server.api().post(f"/api/v1/runs/{entity}/t", {"id": f"t{i:02d}"})
            assert status == 201, body
        api = cohort.Api(base_url=server.url, api_key=key)
        ids = [r.id for r in api.runs(f"{entity}/t", order="name", per_page=1)]
        assert ids == [f"t{i:02d}" for i in range(12)]  # 12+ requests past the burst: all served
        api.close()
    finally:
        server.stop()
