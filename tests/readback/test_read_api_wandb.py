"""cohort.Api as wandb.Api users use it, against a real server (docs/python-api.md): non-finite
values in bucketed history and in summaries, saving changes with run.update(), run.delete(), a
missing project, and W&B's spellings (pandas=False, _step, created_at, runs/ paths, filter
names). The runs are written through the HTTP API (create, writer, ingest batches)."""
import datetime
import math

import pytest

import rb_data  # noqa: F401  (first: puts the SDK on sys.path)
from rb_data import rb_server  # noqa: F401 (fixture)

import cohort  # noqa: E402

PROJECT = "wb"
T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def http(rb_server):
    return rb_server.api()


@pytest.fixture(scope="module")
def entity(http):
    status, viewer = http.get("/api/v1/viewer")
    assert status == 200
    return viewer["entity"]


@pytest.fixture(scope="module")
def api(rb_server):
    a = cohort.Api(base_url=rb_server.url, api_key=rb_server.config["api_key"])
    yield a
    a.close()


def ok(answer):
    status, payload = answer
    assert status in (200, 201), payload
    return payload


def make_run(http, entity, run_id, project=PROJECT, history=(), system=(), summary=None,
             **fields):
    """A run with one writer ("w0"), `history` [(step, {key: value})] and `system`
    [(time, {key: value})] ingested, and `summary` patched."""
    base = f"/api/v1/runs/{entity}/{project}"
    ok(http.post(base, dict(fields, id=run_id)))
    if history or system:
        ok(http.post(f"{base}/{run_id}/writers", {"label": "w0", "primary": True}))
        ok(http.post(f"{base}/{run_id}/writers/w0/batches", {
            "seq": 1,
            "history": [{"step": s, "time": T0 + s, "values": v} for s, v in history],
            "system": [{"time": t, "values": v} for t, v in system]}))
        ok(http.post(f"{base}/{run_id}/writers/w0/finish", {"exit_code": 0}))
    if summary is not None:
        ok(http.patch(f"{base}/{run_id}", {"summary": summary}))
    return f"{entity}/{project}/{run_id}"


def nan(v):
    return isinstance(v, float) and math.isnan(v)


# -- 1. bucketed reads of non-finite values ------------------------------------------------------
def test_history_samples_of_non_finite_values_gives_nan_gaps(http, entity, api):
    # Steps 0-4 all NaN (no finite value: min, max, mean null); 5-9 hold an infinity (mean null,
    # max "Infinity"); 10-14 finite.
    values = ["NaN"] * 5 + [1.0, 2.0, "Infinity", 3.0, 4.0] + [5.0, 6.0, 7.0, 8.0, 9.0]
    path = make_run(http, entity, "nonfinite",
                    history=[(s, {"loss": v}) for s, v in enumerate(values)],
                    system=[(T0 + 1000 * i, {"cpu": v}) for i, v in
                            enumerate(["NaN", "NaN", 1.0, 2.0])])
    df = api.run(path).history(keys=["loss"], samples=3)
    assert len(df) == 3 and df["loss.mean"].dtype == "float64"
    first, second, third = df.to_dict("records")
    assert all(nan(first[f"loss.{s}"]) for s in ("min", "max", "mean", "last"))
    assert second["loss.min"] == 1.0 and second["loss.max"] == math.inf
    assert nan(second["loss.mean"]) and second["loss.last"] == 4.0
    assert (third["loss.min"], third["loss.max"], third["loss.mean"]) == (5.0, 9.0, 7.0)
    # system_metrics(samples=N) reads through the same path.
    sm = api.run(path).system_metrics(samples=2)
    assert list(sm.columns) == ["label", "time", "cpu", "cpu.min", "cpu.max", "cpu.mean",
                                "cpu.last"]
    assert nan(sm["cpu.mean"][0]) and sm["cpu.mean"][1] == 1.5


# -- 2. summaries ---------------------------------------------------------------------------------
def test_summary_non_finite_values_read_as_floats(http, entity, api, monkeypatch):
    from cohort import api_columns
    make_run(http, entity, "sum0", project="sums",
             summary={"loss": "NaN", "best": "Infinity", "worst": "-Infinity", "acc": 0.25,
                      "note": "NaNa", "nested": {"v": "NaN"}})
    make_run(http, entity, "sum1", project="sums", summary={"loss": 0.3, "acc": 0.75})
    make_run(http, entity, "sum2", project="sums")  # summary {}
    run = api.run(f"{entity}/sums/sum0")
    assert nan(run.summary["loss"]) and run.summary["best"] == math.inf
    assert run.summary["worst"] == -math.inf and run.summary["note"] == "NaNa"
    assert nan(run.summary["nested"]["v"])
    frames = [api.runs(f"{entity}/sums", order="name").to_dataframe()]  # columns
    monkeypatch.setattr(api_columns, "available", lambda: False)
    frames.append(api.runs(f"{entity}/sums", order="name").to_dataframe())  # JSON
    monkeypatch.undo()
    for df in frames:
        assert list(df["id"]) == ["sum0", "sum1", "sum2"]
        assert df["summary.loss"].dtype == "float64" and df["summary.best"][0] == math.inf
        assert df["summary.worst"].dtype == "float64"
        assert df[df["summary.loss"] < 0.5]["id"].tolist() == ["sum1"]
        assert df["summary.note"][0] == "NaNa"
    import pandas as pd
    pd.testing.assert_frame_equal(frames[0].drop(columns="runtime_ms"),
                                  frames[1].drop(columns="runtime_ms"))


def test_an_empty_summary_or_config_adds_no_column(http, entity, api, monkeypatch):
    from cohort import api_columns
    make_run(http, entity, "e0", project="empties", config={"lr": 0.1},
             summary={"acc": 0.5, "deep": {}})
    make_run(http, entity, "e1", project="empties")  # config {}, summary {}
    for columns in (True, False):
        monkeypatch.setattr(api_columns, "available", lambda: columns)
        df = api.runs(f"{entity}/empties", order="name").to_dataframe()
        assert "summary" not in df.columns and "config" not in df.columns
        assert [c for c in df.columns if "." in c] == ["config.lr", "summary.acc",
                                                       "summary.deep"]
        assert df["summary.deep"][0] == {}  # a nested empty object stays
        assert math.isnan(df["summary.acc"][1])


# -- 3. saving changes ----------------------------------------------------------------------------
def test_update_saves_what_changed_since_the_run_was_read(http, entity, api):
    path = make_run(http, entity, "upd", name="before", group="g", tags=["a"],
                    config={"lr": 0.1, "drop": 1, "opt": {"name": "adam"}},
                    summary={"acc": 0.5, "gone": 1, "loss": "NaN"})
    run = api.run(path)
    run.name = "after"
    run.notes = "some notes"
    run.tags.append("b")
    run.config["lr"] = 0.2
    run.config["new"] = None  # a null config value is a value
    del run.config["drop"]
    run.summary["best"] = float("inf")
    del run.summary["gone"]
    assert run.update() is run
    fresh = api.run(path)
    assert (fresh.name, fresh.notes, fresh.group, fresh.tags) == ("after", "some notes", "g",
                                                                  ["a", "b"])
    assert fresh.config == {"lr": 0.2, "new": None, "opt": {"name": "adam"}}
    assert fresh.summary["acc"] == 0.5 and fresh.summary["best"] == math.inf
    assert "gone" not in fresh.summary and nan(fresh.summary["loss"])
    assert run.config == fresh.config and run.name == "after"  # holds the server's answer
    # Only what changed is sent: a change made elsewhere meanwhile to another field stays.
    ok(http.patch(f"/api/v1/runs/{entity}/{PROJECT}/upd", {"summary": {"acc": 0.9},
                                                            "group": "other"}))
    run.job_type = "eval"
    run.update()
    fresh = api.run(path)
    assert (fresh.job_type, fresh.group, fresh.summary["acc"]) == ("eval", "other", 0.9)


def test_update_refused_by_the_server_raises_naming_the_problem(http, entity, api):
    path = make_run(http, entity, "refused")
    run = api.run(path)
    run.name = "x" * 300  # over the server's 256 bytes
    with pytest.raises(cohort.UsageError, match=r"run.update\(\) of .*refused.*name"):
        run.update()
    run.name = "fine"
    run.tags = "not-a-list"
    with pytest.raises(cohort.UsageError, match="run.tags"):
        run.update()
    # A key that may no longer read or write (revoked meanwhile).
    status, made = http.post("/api/v1/keys", {"name": "wb-member", "role": "member"})
    assert status == 201
    member = cohort.Api(base_url=api.base_url, api_key=made["key"])
    mine = member.run(path)
    ok(http.delete(f"/api/v1/keys/{made['id']}"))
    mine.name = "by a revoked key"
    with pytest.raises(cohort.AuthError, match=r"run.update\(\) of .*refused"):
        mine.update()
    member.close()
    assert api.run(path).name == ""


def test_delete_removes_the_run(http, entity, api):
    path = make_run(http, entity, "del", history=[(0, {"loss": 1.0})])
    run = api.run(path)
    assert run.delete() is None
    with pytest.raises(cohort.NotFound):
        api.run(path)
    with pytest.raises(cohort.NotFound, match=r"run.delete\(\) of .*del.*refused"):
        run.delete()
    run.name = "ghost"
    with pytest.raises(cohort.NotFound, match=r"run.update\(\)"):
        run.update()


# -- 4. a missing project -------------------------------------------------------------------------
def test_runs_of_a_missing_project_warns_naming_it(http, entity, api):
    """A mistyped project gave 0 runs without a word; it is an empty sequence with a warning
    naming it and the nearest names (not an error: a project before its first run is empty,
    and a script may poll it: tests/integrations/test_shared_modes.py)."""
    make_run(http, entity, "p0", project="mnist")
    runs = api.runs(f"{entity}/mnsit")
    with pytest.warns(UserWarning, match=r"project .*/mnsit has no runs.*'mnist'"):
        assert len(runs) == 0
    with pytest.warns(UserWarning, match="mnsit"):
        assert list(api.runs("mnsit")) == []
    with pytest.warns(UserWarning, match="mnsit"):
        assert len(api.runs(f"{entity}/mnsit").to_dataframe()) == 0
    # A project that exists, with no run matching: no runs, no warning.
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        none = api.runs(f"{entity}/mnist", filters={"group": "nope"})
        assert len(none) == 0 and list(none) == [] and len(none.to_dataframe()) == 0


# -- 5. W&B's spellings ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spell(http, entity, api):
    """Two runs of project "spell": "spell" (5 steps of loss) and "spell2"."""
    path = make_run(http, entity, "spell", project="spell", name="alpha.1", group="g",
                    history=[(s, {"loss": 1.0 / (s + 1)}) for s in range(5)],
                    summary={"loss": 0.2})
    make_run(http, entity, "spell2", project="spell", name="beta", summary={"loss": 0.8})
    return api.run(path)


def ids(api, entity, filters):
    return sorted(r.id for r in api.runs(f"{entity}/spell", filters=filters))


def test_history_pandas_false_gives_a_list_of_row_dicts(spell):
    rows = spell.history(pandas=False)
    assert rows == [{"step": s, "time": T0 + s, "loss": 1.0 / (s + 1)} for s in range(5)]
    assert all(type(r["step"]) is int and type(r["loss"]) is float for r in rows)
    assert spell.history(samples=1, pandas=False)[0]["loss.max"] == 1.0


def test_history_x_axis_takes_wandb_names(spell):
    assert spell.history(x_axis="_step").equals(spell.history())
    assert spell.history(x_axis="_timestamp").equals(spell.history(x_axis="time"))
    with pytest.raises(cohort.UsageError, match="_timestamp"):
        spell.history(x_axis="epoch")


def test_created_at_is_utc_iso_8601(spell):
    expected = datetime.datetime.fromtimestamp(spell.created_ms // 1000, datetime.timezone.utc)
    assert spell.created_at == expected.strftime("%Y-%m-%dT%H:%M:%S")
    assert datetime.datetime.fromisoformat(spell.created_at) == expected.replace(tzinfo=None)


def test_run_path_in_wandb_url_form(spell, entity, api):
    assert api.run(f"{entity}/spell/runs/spell").id == "spell"
    assert api.run(spell.url).id == "spell"  # the run's web address
    # The UI's own address of it, what the SDK's run.url / get_url() give.
    assert api.run(f"http://127.0.0.1:8787/?p={entity}%2Fspell&run=spell").id == "spell"
    assert api.history([f"{entity}/spell/runs/spell"])["loss"].tolist() == [
        1.0 / (s + 1) for s in range(5)]
    with pytest.raises(cohort.UsageError, match="entity/project/run_id"):
        api.run(f"{entity}/spell/notruns/spell")


def test_filters_take_summary_metrics_and_created_at(spell, entity, api):
    assert ids(api, entity, {"summary_metrics.loss": {"$lt": 0.5}}) == ["spell"]
    created = api.run(f"{entity}/spell/spell2").created_ms
    assert ids(api, entity, {"created_at": {"$gt": spell.created_ms - 1}}) == ["spell",
                                                                               "spell2"]
    assert ids(api, entity, {"createdAt": {"$gt": created + 1}}) == []
    when = datetime.datetime.fromtimestamp((spell.created_ms - 60_000) / 1000,
                                           datetime.timezone.utc)
    assert ids(api, entity, {"created_at": {"$gt": when.strftime("%Y-%m-%dT%H:%M:%SZ")}}) == [
        "spell", "spell2"]
    assert ids(api, entity, {"created_at": {"$lt": when}}) == []
    assert ids(api, entity, {"display_name": "beta"}) == ["spell2"]
    with pytest.raises(cohort.UsageError, match="ISO 8601"):
        api.runs(f"{entity}/spell", filters={"created_at": {"$gt": "yesterday"}})


def test_regex_filter_with_metacharacters_raises_usage_error(spell, entity, api):
    assert ids(api, entity, {"name": {"$regex": "bet"}}) == ["spell2"]  # plain text: contains
    for pattern in ("^alpha", "alpha.*", "a|b", "alpha\\.1"):
        with pytest.raises(cohort.UsageError, match=r"\$regex .*substring match"):
            api.runs(f"{entity}/spell", filters={"name": {"$regex": pattern}})
