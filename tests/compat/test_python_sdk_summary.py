"""The run summary the vendor's Python SDK sends (wandb-summary.json, its whole summary on each
line: the last line wins), as Cohort's API answers it."""
import json
import urllib.request

import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

DELETE_SCRIPT = r'''
import json, os, sys, time, urllib.request
import wandb
run_id, project, entity = sys.argv[1], sys.argv[2], sys.argv[3]
run = wandb.init(project=project, id=run_id,
                 settings=wandb.Settings(x_file_stream_transmit_interval=0.2))
run.summary["tmp"] = 1
run.summary["keep"] = 2
run.log({"acc": 0.5})

def stored_summary():
    req = urllib.request.Request(
        f"{os.environ['WANDB_BASE_URL']}/api/v1/runs/{entity}/{project}/{run_id}")
    req.add_header("Authorization", "Bearer " + os.environ["WANDB_API_KEY"])
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["summary"]

deadline = time.time() + 60
while "tmp" not in stored_summary():  # the server has the key before the client deletes it
    assert time.time() < deadline, stored_summary()
    time.sleep(0.2)
print("STORED", json.dumps(stored_summary(), sort_keys=True))
del run.summary["tmp"]
run.log({"acc": 0.75})
run.finish()
'''


def test_a_summary_key_the_client_deletes_is_deleted(server, api, entity, tmp_path):
    """`del run.summary["tmp"]` after the server stored "tmp": the client's next summary line
    lacks it, and the run's summary loses it; the other keys (set, and logged) stay."""
    env = sdk_env(server, tmp_path)
    proc = run_python(DELETE_SCRIPT, env, tmp_path, args=("sumdel01", "sdksum", entity))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "STORED" in proc.stdout, proc.stdout + proc.stderr
    status, run = api.get(f"/api/v1/runs/{entity}/sdksum/sumdel01")
    assert status == 200, run
    assert "tmp" not in run["summary"], run["summary"]
    assert run["summary"]["keep"] == 2 and run["summary"]["acc"] == 0.75, run["summary"]


NESTED_SCRIPT = r'''
import sys
import wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id)
for i in range(3):
    run.log({"d": {"x": i, "y": {"z": i * 2}}})
run.summary["best"] = {"acc": 0.9}
run.finish()
'''


def test_nested_summary_values_are_flattened_as_history_is(server, api, entity, tmp_path):
    """`run.log({"d": {"x": 1, "y": {"z": 2}}})` makes series d.x and d.y.z: the summary holds
    them under those keys only, not also the nested object "d" (the UI showed it twice)."""
    env = sdk_env(server, tmp_path)
    proc = run_python(NESTED_SCRIPT, env, tmp_path, args=("sumnest01", "sdksum"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status, run = api.get(f"/api/v1/runs/{entity}/sdksum/sumnest01")
    assert status == 200, run
    summary = {k: v for k, v in run["summary"].items() if not k.startswith("_")}
    assert summary == {"d.x": 2, "d.y.z": 4, "best.acc": 0.9}, run["summary"]


DEFINE_METRIC_SCRIPT = r'''
import sys
import wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id)
run.define_metric("acc", summary="max")
run.define_metric("hidden", summary="none")
run.define_metric("loss2", summary="min,last")
for acc, loss in ((0.5, 0.3), (0.9, 0.1), (0.1, 0.2)):
    run.log({"acc": acc, "hidden": acc * 10, "loss2": loss, "plain": loss * 2})
run.finish()
'''


def test_define_metric_summaries_replace_the_last_value(server, api, entity, tmp_path):
    """`define_metric(summary="max")` makes the client send {"acc": {"max": 0.9}} and no plain
    "acc"; `summary="none"` leaves the key out: the run's summary holds what the client asked
    for, not also the series' last point (the runs table showed acc's last value, 0.1, and the
    excluded key came back)."""
    env = sdk_env(server, tmp_path)
    proc = run_python(DEFINE_METRIC_SCRIPT, env, tmp_path, args=("sumdef01", "sdksum"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status, run = api.get(f"/api/v1/runs/{entity}/sdksum/sumdef01")
    assert status == 200, run
    summary = {k: v for k, v in run["summary"].items() if not k.startswith("_")}
    assert summary == {"acc.max": 0.9, "loss2.min": 0.1, "loss2.last": 0.2, "plain": 0.4}, \
        run["summary"]
    # The series themselves are all kept.
    status, keys = api.get(f"/api/v1/runs/{entity}/sdksum/sumdef01/keys")
    assert status == 200, keys
    names = {k["key"] if isinstance(k, dict) else k for k in keys["keys"]}
    assert {"acc", "hidden", "loss2", "plain"} <= names, keys
