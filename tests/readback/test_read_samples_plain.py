"""``run.history(samples=N)`` as code written for ``wandb.Api()`` reads it, against a real
server: the frame has the plain ``<key>`` column (``df["loss"]``), a value that was logged (the
bucket's last one, ``<key>.last``), beside the ``<key>.min/.max/.mean/.last`` columns, also
for buckets of NaN and infinities and for a sparse key. The run is written through the HTTP API
(create, writer, ingest batch)."""
import math

import numpy as np
import pytest

import rb_data  # noqa: F401  (first: puts the SDK on sys.path)
from rb_data import rb_server  # noqa: F401 (fixture)

import cohort  # noqa: E402

PROJECT = "plain"
T0 = 1_700_000_000_000
# 20 steps, 4 buckets of 5: every point NaN; an infinity inside; an infinity last; finite.
LOSS = (["NaN"] * 5 + [1.0, 2.0, "Infinity", 3.0, 4.0] + [1.0, 2.0, 3.0, 4.0, "-Infinity"]
        + [5.0, 6.0, 7.0, 8.0, 9.0])
VAL = {0: 0.5, 7: 0.25, 12: "NaN", 13: 0.125}  # a sparse key: nothing in the last bucket


def ok(answer):
    status, payload = answer
    assert status in (200, 201), payload
    return payload


def value(v):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v)


@pytest.fixture(scope="module")
def run(rb_server):
    http = rb_server.api()
    entity = ok(http.get("/api/v1/viewer"))["entity"]
    base = f"/api/v1/runs/{entity}/{PROJECT}"
    ok(http.post(base, {"id": "p1"}))
    ok(http.post(f"{base}/p1/writers", {"label": "w0", "primary": True}))
    history = []
    for s, v in enumerate(LOSS):
        values = {"loss": v}
        if s in VAL:
            values["val"] = VAL[s]
        history.append({"step": s, "time": T0 + s, "values": values})
    ok(http.post(f"{base}/p1/writers/w0/batches", {
        "seq": 1, "history": history,
        "system": [{"time": T0 + 1000 * i, "values": {"cpu": v}}
                   for i, v in enumerate([1.0, "NaN", 2.0, 3.0])]}))
    ok(http.post(f"{base}/p1/writers/w0/finish", {"exit_code": 0}))
    api = cohort.Api(base_url=rb_server.url, api_key=rb_server.config["api_key"])
    yield api.run(f"{entity}/{PROJECT}/p1")
    api.close()


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_bucketed_history_has_the_plain_key_column_as_wandb_code_reads_it(run):
    df = run.history(keys=["loss"], samples=4)
    assert list(df.columns) == ["step", "time", "loss", "loss.min", "loss.max", "loss.mean",
                                "loss.last"]
    assert df["loss"].dtype == "float64" and len(df) == 4
    # The last point logged in each bucket, at the row's step: NaN, 4.0, -inf, 9.0.
    want = [value(LOSS[step]) for step in df["step"]]
    assert df["step"].tolist() == [4, 9, 14, 19]
    assert all(same(a, b) for a, b in zip(df["loss"].tolist(), want)), df["loss"].tolist()
    assert all(same(a, b) for a, b in zip(df["loss"].tolist(), df["loss.last"].tolist()))
    # The statistics are still there, unchanged: a bucket holding an infinity has no mean.
    assert math.isnan(df["loss.mean"][1]) and df["loss.max"][1] == math.inf
    assert df["loss.min"][2] == -math.inf and df["loss.mean"][3] == 7.0
    # W&B's usual reads of it.
    assert df["loss"].iloc[-1] == 9.0
    assert np.isfinite(df["loss"]).sum() == 2
    rows = run.history(keys=["loss"], samples=4, pandas=False)
    assert rows[3]["loss"] == 9.0 and rows[2]["loss"] == -math.inf and math.isnan(rows[0]["loss"])


def test_a_sparse_key_takes_its_own_last_value_and_nan_where_a_bucket_has_none(run):
    df = run.history(keys=["loss", "val"], samples=4)
    assert list(df.columns) == ["step", "time"] + [
        c for k in ("loss", "val") for c in (k, f"{k}.min", f"{k}.max", f"{k}.mean", f"{k}.last")]
    assert df["val"].tolist()[:2] == [0.5, 0.25]
    assert df["val"][2] == 0.125  # step 13's, the bucket's last (step 12's NaN came before)
    assert math.isnan(df["val"][3])  # not logged in the last bucket
    assert df["step"].tolist() == [4, 9, 14, 19]  # the row's step: the dense key's last


def test_system_metrics_with_samples_have_the_plain_column_too(run):
    sm = run.system_metrics(samples=2)
    assert list(sm.columns) == ["label", "time", "cpu", "cpu.min", "cpu.max", "cpu.mean",
                                "cpu.last"]
    assert all(same(a, b) for a, b in zip(sm["cpu"].tolist(), sm["cpu.last"].tolist()))
    assert math.isnan(sm["cpu"][0]) and sm["cpu"][1] == 3.0
