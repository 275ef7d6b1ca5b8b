"""Scripts written for the vendor's SDK, run as real processes against a real `cohort server`
(real node agent), read back through the server's API: values its run.log accepts (lists,
arrays, DataFrames, str values), init's reinit default, config files and include/exclude keys,
and the Run attributes such scripts use (url, resumed, starting_step, dir, save)."""
import json
import pathlib
import sys
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from dist_helpers import assert_ok, client, wait_until  # noqa: E402,F401

PROJECT = "vendor"
HEADER = "import json, cohort\n"


def _last_json(proc):
    assert_ok(proc)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_lists_arrays_dataframes_and_str_values_reach_the_server(client):
    proc = assert_ok(client.python(HEADER + (
        "import numpy as np, pandas as pd\n"
        f"run = cohort.init(project={PROJECT!r}, id='values')\n"
        "for i in range(3):\n"
        "    run.log({'loss': 3.0 - i, 'hist': [1, 2, 3 + i], 'arr': np.arange(40) * 1.0,\n"
        "             'one': [0.5 * i], 'phase': ['warmup', 'train', 'eval'][i]})\n"
        "run.log({'preds': pd.DataFrame({'id': [1, 2], 'label': ['cat', 'dog']})})\n"
        "run.finish()\n")))
    assert proc.stderr.count("'phase': a str is not stored as a chart series") == 1, proc.stderr
    view = client.run_view("values", project=PROJECT)
    run = view.wait_state(("finished",))
    # The last str value of the key is in the summary, beside the last logged numbers.
    assert run["summary"]["phase"] == "eval"
    assert run["summary"]["loss"] == 1.0
    hist = wait_until(lambda: view.history(keys=["loss", "one"]), what="history")
    series = {key: [v for _, v in points] for (key, _), points in hist.items()}
    assert series == {"loss": [3.0, 2.0, 1.0], "one": [0.0, 0.5, 1.0]}  # every call's numbers
    body = client.get(view.path + "/histograms", keys="hist,arr")
    got = {h["key"]: h for h in body["histograms"]}
    assert got["hist"]["count"] == 3 and got["arr"]["count"] == 3
    first = got["hist"]["steps"][0]
    assert (first["lo"], first["hi"], sum(first["counts"]), len(first["counts"])) == (
        1.0, 3.0, 3, 32)
    table = wait_until(lambda: client.get(view.path + "/tables/preds", missing=True),
                       what="the DataFrame's table")
    assert table["columns"] == ["id", "label"] and table["data"] == [[1, "cat"], [2, "dog"]]


def test_a_call_with_a_value_that_cannot_be_logged_writes_nothing(client):
    proc = client.python(HEADER + (
        f"run = cohort.init(project={PROJECT!r}, id='bad')\n"
        "run.log({'loss': 1.0, 'phase': 'ok'})\n"
        "try:\n"
        "    run.log({'loss': 2.0, 'phase': 'never', 'tags': ['a', 'b']})\n"
        "except TypeError as e:\n"
        "    print('raised', e, flush=True)\n"
        "run.finish()\n"))
    assert_ok(proc)
    assert "raised log: key 'tags': cannot log a list holding str" in proc.stdout
    view = client.run_view("bad", project=PROJECT)
    run = view.wait_state(("finished",))
    assert run["summary"]["phase"] == "ok" and run["summary"]["loss"] == 1.0
    hist = wait_until(lambda: view.history(keys=["loss"]), what="history")
    assert [v for _, v in next(iter(hist.values()))] == [1.0]


def test_a_second_init_returns_the_running_run_as_the_vendors_sdk(client):
    out = _last_json(client.python(HEADER + (
        f"first = cohort.init(project={PROJECT!r})\n"
        f"again = cohort.init(project={PROJECT!r})\n"
        "other = cohort.init(project='vendor', reinit='create_new')\n"
        "cohort.log({'x': 1.0})\n"
        "print(json.dumps({'same': again is first, 'current': cohort.run is first,\n"
        "                  'other': other is not first, 'first': first.id, 'new': other.id}))\n"
        "other.finish()\n"
        "first.finish()\n")))
    assert out["same"] and out["current"] and out["other"], out
    listed = wait_until(lambda: (rs := client.runs(project=PROJECT)) and len(rs) == 2 and rs,
                        what="2 runs")
    assert {r["id"] for r in listed} == {out["first"], out["new"]}
    # cohort.log went to the current run (the first), not to the one create_new started.
    view = client.run_view(out["first"], project=PROJECT)
    assert wait_until(lambda: view.history(keys=["x"]), what="x on the first run")
    assert client.run_view(out["new"], project=PROJECT).history(keys=["x"]) == {}


def test_config_files_and_include_exclude_keys(client):
    (client.tmp / "config.yaml").write_text("lr: 0.1\nbatch: 32\nmodel:\n  depth: 4\n")
    (client.tmp / "defaults.yaml").write_text(
        "wandb_version: 1\nlr:\n  desc: learning rate\n  value: 0.01\nepochs:\n  value: 5\n")
    (client.tmp / "config.json").write_text('{"lr": 0.2, "seed": 1}')
    assert_ok(client.python(HEADER + (
        f"cohort.init(project={PROJECT!r}, id='yaml', config='config.yaml',\n"
        "            config_exclude_keys=['batch']).finish()\n"
        f"cohort.init(project={PROJECT!r}, id='defaults', config='defaults.yaml').finish()\n"
        f"cohort.init(project={PROJECT!r}, id='json', config='config.json',\n"
        "            config_include_keys=['lr']).finish()\n")))
    configs = {rid: client.run_view(rid, project=PROJECT).wait_state(("finished",))["config"]
               for rid in ("yaml", "defaults", "json")}
    assert configs == {"yaml": {"lr": 0.1, "model": {"depth": 4}},
                       "defaults": {"lr": 0.01, "epochs": 5},
                       "json": {"lr": 0.2}}


def test_url_resumed_starting_step_dir_and_save(client):
    script = HEADER + (
        "import os\n"
        f"run = cohort.init(project={PROJECT!r}, id='again', resume='allow')\n"
        "start = {'url': run.url, 'get_url': run.get_url(), 'resumed': run.resumed,\n"
        "         'starting_step': run.starting_step, 'dir': run.dir}\n"
        "open(os.path.join(run.dir, 'model.pt'), 'w').write('weights')\n"
        "start['saved'] = run.save(os.path.join(run.dir, 'model.pt'))\n"
        "start['preempting'] = run.mark_preempting()\n"
        "for i in range(4):\n"
        "    run.log({'loss': 1.0 / (i + 1)})\n"
        "print(json.dumps(start))\n"
        "run.finish()\n")
    first_proc = client.python(script)
    first = _last_json(first_proc)
    second = _last_json(client.python(script))
    ui = client.server.url.rstrip("/")
    expected = (f"{ui}/?p={urllib.parse.quote(client.entity, safe='')}%2F{PROJECT}"
                "&run=again")
    assert first["url"] == first["get_url"] == expected  # the web UI's run page
    assert (first["resumed"], first["starting_step"]) == (False, 0)
    assert (second["resumed"], second["starting_step"]) == (True, 4)
    data_dir = client.env.get("COHORT_DIR") or ""
    assert first["dir"].endswith(f"/%files/{PROJECT}/again/files"), first["dir"]
    if data_dir:
        assert first["dir"].startswith(data_dir)
    assert pathlib.Path(first["dir"], "model.pt").read_text() == "weights"
    # run.save uploads nothing and says so, naming the file and what to do instead.
    assert first["saved"] == [] and first["preempting"] is None
    assert "did NOT upload 1 file (" in first_proc.stderr and "model.pt" in first_proc.stderr
    assert "run.log_artifact(" in first_proc.stderr
