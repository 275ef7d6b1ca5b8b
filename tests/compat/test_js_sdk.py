"""The vendor's JavaScript SDK (`@wandb/sdk` from npm, pinned by tests/compat/js/package-lock.json)
run by Node as a real client of Cohort, checked through Cohort's API."""
import json
import subprocess

import pytest

from .compat_helpers import JS_DIR, sdk_env

pytestmark = pytest.mark.timeout(300)


def test_js_sdk_init_log_finish(server, api, entity, js_sdk, tmp_path):
    env = sdk_env(server, tmp_path)
    proc = subprocess.run([js_sdk, str(JS_DIR / "client.mjs"), "jsproj", "jsrun01", "12"],
                          cwd=JS_DIR, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert printed == {"id": "jsrun01", "entity": entity, "project": "jsproj", "name": "js-run"}

    status, run = api.get(f"/api/v1/runs/{entity}/jsproj/jsrun01")
    assert status == 200, run
    assert run["name"] == "js-run"
    assert run["config"] == {"lr": 0.01, "layers": [64, 32], "optimizer": {"name": "adam"}}
    assert run["state"] == "finished" and run["exit_code"] == 0
    assert run["summary"]["loss"] == 1 / 12
    # @wandb/sdk 0.5.1 accepts group and jobType in init() but does not send them (its
    # initRunPayload keeps only project, entity, name, id and config): nothing to store.
    assert run["group"] == "" and run["job_type"] == ""

    status, body = api.get(f"/api/v1/runs/{entity}/jsproj/jsrun01/history?keys=loss,acc")
    series = {s["key"]: s for s in body["series"]}
    assert [p[0] for p in series["loss"]["points"]] == list(range(12))
    assert [p[2] for p in series["loss"]["points"]] == pytest.approx(
        [1 / (i + 1) for i in range(12)], rel=1e-12)
    assert [p[2] for p in series["acc"]["points"]] == pytest.approx([i / 12 for i in range(12)],
                                                                    rel=1e-12)
    status, writers = api.get(f"/api/v1/runs/{entity}/jsproj/jsrun01/writers")
    (w,) = writers["writers"]
    assert w["label"] == "main" and w["state"] == "finished"
