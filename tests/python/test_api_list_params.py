"""Keys and writer labels holding ',' (or '\\') read back by name through cohort.Api, against a
real server and node agents (tests/conftest.py's ServerProcess, tests/distributed/dist_helpers.py):
the read API's list parameters (keys=, writers=, labels=) escape such an item as `\\,` / `\\\\`
(docs/api.md "List parameters"; python/cohort/api_http.py list_param). Before, the server split
`acc,top5` into `acc` and `top5`: the SDK refused such keys (history, histograms) or got nothing
back (media), and a label `node,1` selected no writer."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import client, wait_until  # noqa: E402,F401  (the fixture)

import sdk_helpers  # noqa: E402,F401
import cohort  # noqa: E402

# Two writers of one shared run, labelled with a comma (and one with a backslash), each logging
# a scalar, a histogram and an HTML page under keys with a comma, plus a plain `loss`.
WRITER = r"""
import os, sys
import cohort
label = sys.argv[1]
primary = label == "node,1"
run = cohort.init(project="commas", id=os.environ["RUN_ID"], settings=cohort.Settings(
    mode="shared", x_label=label, x_primary=primary, x_update_finish_state=primary))
w = 1 if primary else 2
for step in range(3):
    run.log({"acc,top5": w * 10 + step, "loss": -step,
             "grad,w": cohort.Histogram([step] * w, num_bins=1),
             "pred,img": cohort.Html(f"<p>{label} {step}</p>")}, step=step)
print(f"console of {label}")
run.finish()
"""
LABELS = ["node,1", "node\\2"]


def test_keys_and_labels_with_commas_read_back_by_name(client, monkeypatch):
    script = client.tmp / "writer.py"
    script.write_text(WRITER)
    env = {"RUN_ID": "commas1"}
    procs = [client.popen([script, label], env=env) for label in LABELS]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, out + err
    api = cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])
    run = api.run(f"{client.entity}/commas/commas1")

    def media_uploaded():  # every media row of the run (no list parameter)
        rows = run.media()
        return len(rows) == 6 and all(m["uploaded"] for m in rows)

    wait_until(media_uploaded, what="6 uploaded media rows")

    # Scalars: exact rows and buckets, one writer by its label, and the key among others.
    df = run.history(keys=["acc,top5"], writers=["node,1"])
    assert list(df.columns) == ["writer", "step", "time", "acc,top5"]
    assert df["writer"].tolist() == ["node,1"] * 3
    assert df["acc,top5"].tolist() == [10, 11, 12]
    both = run.history(keys=["acc,top5", "loss"])
    assert sorted(set(both["writer"])) == sorted(LABELS)
    assert both[both["writer"] == "node\\2"]["acc,top5"].tolist() == [20, 21, 22]
    assert sorted(both["loss"].tolist()) == [-2, -2, -1, -1, 0, 0]
    rows = list(run.scan_history(keys=["acc,top5"]))
    assert sorted(r["acc,top5"] for r in rows) == [10, 11, 12, 20, 21, 22]
    buckets = run.history(keys=["acc,top5"], writers=["node\\2"], samples=3)
    assert set(buckets["writer"]) == {"node\\2"} and len(buckets) == 3

    # Histograms of the key, per writer.
    h = run.histograms("grad,w", writers=["node,1"])
    assert set(h["key"]) == {"grad,w"} and set(h["writer"]) == {"node,1"}
    assert [sum(c) for c in h["counts"]] == [1, 1, 1]
    h = run.histograms(["grad,w"])
    assert sorted(set(h["writer"])) == sorted(LABELS)
    assert sorted(sum(c) for c in h["counts"]) == [1, 1, 1, 2, 2, 2]

    # Media, by key and writer; then with answers cut at 2 rows, which reads each
    # (key, writer) pair alone (python/cohort/api_media.py _pair_rows).
    mine = run.media("pred,img", writers=["node,1"])
    assert [(m["key"], m["writer"], m["step"]) for m in mine] == [
        ("pred,img", "node,1", s) for s in range(3)]
    assert mine[2].download(str(client.tmp / "dl")).endswith(".html")
    whole = [(m["key"], m["writer"], m["step"]) for m in run.media(["pred,img"])]
    assert len(whole) == 6
    transport = api._t
    plain_get = transport.get

    def cut(path, query=None):
        if path.endswith("/media"):
            return plain_get(path, dict(query or {}, limit=2))
        return plain_get(path, query)

    monkeypatch.setattr(transport, "get", cut)
    assert [(m["key"], m["writer"], m["step"]) for m in run.media(["pred,img"])] == whole
    monkeypatch.setattr(transport, "get", plain_get)

    # The members of a rank aggregation, and the console of one writer, by label.
    agg = run.aggregate("acc,top5", writers=["node,1", "node\\2"])
    assert agg["members"].tolist() == [2, 2, 2]
    assert agg["mean"].tolist() == [15, 16, 17]
    wait_until(lambda: run.logs(label="node,1"), what="the console of node,1")
    assert {line["label"] for line in run.logs(label=["node,1"])} == {"node,1"}


def test_list_param_escapes_what_split_list_param_reads_back():
    from cohort.api_http import list_param, split_list_param
    assert list_param(["acc,top5", "loss"]) == "acc\\,top5,loss"
    assert list_param(["a\\", "b"]) == "a\\\\,b"
    for items in (["acc,top5"], ["node,1", "node,2"], [",", "\\", "\\,", ",\\"], ["a\\b", "c"]):
        assert split_list_param(list_param(items)) == items
    assert split_list_param(",a,,b\\,c,") == ["a", "b,c"]
    assert split_list_param("a\\b") == ["a\\b"]  # a '\' before anything else stays

