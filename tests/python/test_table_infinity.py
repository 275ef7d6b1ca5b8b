"""Infinite table cells through a real run (real `cohort server` and node agent,
tests/distributed/dist_helpers.py): cohort.Table stores them as "Infinity"/"-Infinity" (JSON has
no such numbers) and Run.table reads them back as floats; NaN stays a missing cell, and a text
column holding the string "Infinity" keeps it as text."""
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import assert_ok, client, wait_until  # noqa: E402,F401  (the fixture)

import sdk_helpers  # noqa: E402,F401
import cohort  # noqa: E402
from cohort.media import _cell  # noqa: E402

LOG = r"""
import math
import numpy as np, pandas as pd
import cohort
run = cohort.init(project="tinf")
run.log({"t": cohort.Table(columns=["x", "name", "n"], data=[
    [1.5, "a", 1], [math.inf, "Infinity", 2], [-math.inf, "b", 3], [math.nan, None, 4],
    [np.float32("inf"), "c", 5]])})
run.log({"df": cohort.Table(dataframe=pd.DataFrame({"v": [0.5, np.inf, -np.inf, np.nan]}))})
print("RUN", run.id)
run.finish()
"""


def test_cells_keep_infinities_and_not_nan():
    assert _cell(math.inf, 0, "x") == "Infinity" and _cell(-math.inf, 0, "x") == "-Infinity"
    assert _cell(math.nan, 0, "x") is None


def test_infinite_cells_read_back_as_floats(client):
    proc = assert_ok(client.python(LOG))
    run_id = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RUN "))
    api = cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])
    run = api.run(f"{client.entity}/tinf/{run_id}")
    wait_until(lambda: len(run.media(["t", "df"])) == 2
               and all(m["uploaded"] for m in run.media(["t", "df"])), what="both tables")
    df = run.table("t")
    x = list(df["x"])
    assert x[0] == 1.5 and x[1] == math.inf and x[2] == -math.inf and x[4] == math.inf, x
    assert x[3] is None or math.isnan(x[3]), x
    assert df["x"].dtype.kind == "f", df.dtypes
    assert list(df["name"]) == ["a", "Infinity", "b", None, "c"]  # text stays text
    assert list(df["n"]) == [1, 2, 3, 4, 5]
    v = list(run.table("df")["v"])
    assert v[:3] == [0.5, math.inf, -math.inf] and (v[3] is None or math.isnan(v[3])), v

