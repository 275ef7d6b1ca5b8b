"""`run.alert` of the vendor's Python SDK (`wandb` from PyPI) against Cohort: its
notifyScriptableRunAlert mutation opens an alert raised by code on the run's writer, as
Cohort's own SDK does, with the vendor's wait duration applied by the server
(docs/compat.md, "Alerts")."""
import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)

ALERTS = r'''
import sys, time, wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id)
run.log({"loss": 0.5})
run.alert(title="loss diverged", text="loss is NaN at step 0", level=wandb.AlertLevel.ERROR)
run.alert(title="loss diverged", text="again")  # the default wait (1 minute): not raised again
run.alert(title="eval", text="acc 0.5", level="WARN", wait_duration=0.001)
time.sleep(0.2)
run.alert(title="eval", text="acc 0.6", level="WARN", wait_duration=0.001)  # past its wait
run.finish()
print("RUN", run.entity, run.project, run.id)
'''

NOTIFY = """
mutation NotifyScriptableRunAlert ($entityName: String!, $projectName: String!, $runName: String!, $title: String!, $text: String!, $severity: AlertSeverity = INFO, $waitDuration: Duration) {
\tnotifyScriptableRunAlert(input: {entityName:$entityName,projectName:$projectName,runName:$runName,title:$title,text:$text,severity:$severity,waitDuration:$waitDuration}) {
\t\tsuccess
\t}
}
"""


def test_vendor_sdk_alert_opens_a_code_alert(server, api, entity, tmp_path):
    env = sdk_env(server, tmp_path)
    proc = run_python(ALERTS, env, tmp_path, args=("alert01", "alertproj"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"RUN {entity} alertproj alert01" in proc.stdout

    status, body = api.get(f"/api/v1/alerts/{entity}/alertproj?run=alert01")
    assert status == 200, body
    by_title = {a["title"]: a for a in reversed(body["alerts"])}  # the newest of each title
    assert set(by_title) == {"loss diverged", "eval"}, body
    titles = sorted(a["title"] for a in body["alerts"])
    assert titles == ["eval", "eval", "loss diverged"], body  # each call sent is a notification
    status, writers = api.get(f"/api/v1/runs/{entity}/alertproj/alert01/writers")
    (w,) = writers["writers"]
    loss = by_title["loss diverged"]
    assert loss["level"] == "ERROR" and loss["source"] == "code"
    assert loss["text"] == "loss is NaN at step 0"
    assert loss["run"] == "alert01" and loss["writer"] == w["label"]
    assert loss["rule_id"] is None and loss["count"] == 1  # the repeat was within its wait
    assert by_title["eval"]["level"] == "WARN" and by_title["eval"]["count"] == 1


def test_notify_mutation_checks_its_input_and_applies_the_wait(wire, api, entity):
    wire.upsert("alert02", project="alertproj")
    base = {"entityName": entity, "projectName": "alertproj", "runName": "alert02"}

    def notify(**fields):
        status, payload = wire.gql(NOTIFY, {**base, **fields})
        assert status == 200, payload
        return payload

    for fields, named in [({"title": "t", "text": "x", "severity": "LOUD"}, "severity"),
                          ({"title": "", "text": "x"}, "title"),
                          ({"title": "t" * 257, "text": "x"}, "title"),
                          ({"title": "t", "text": "x" * (64 * 1024 + 1)}, "text"),
                          ({"title": "t", "text": "x", "waitDuration": -5}, "waitDuration")]:
        payload = notify(**fields)
        assert payload.get("errors"), (fields, payload)
        assert named in payload["errors"][0]["message"], payload
    status, body = api.get(f"/api/v1/alerts/{entity}/alertproj?run=alert02")
    assert status == 200 and body["alerts"] == [], body  # nothing half-written

    payload = notify(title="hot", text="gpu 91C")  # severity defaults to INFO
    assert payload["data"]["notifyScriptableRunAlert"] == {"success": True}, payload
    assert notify(title="hot", text="gpu 92C", waitDuration=600000)["data"] is not None
    assert notify(title="hot", text="gpu 93C", waitDuration=0)["data"] is not None
    status, body = api.get(f"/api/v1/alerts/{entity}/alertproj?run=alert02")
    # The call within 10 min was dropped; the one without a wait is a new alert.
    assert [a["text"] for a in body["alerts"]] == ["gpu 93C", "gpu 91C"], body
    hot, first = body["alerts"]
    assert hot["level"] == "INFO" and hot["state"] == "open" and first["state"] == "resolved"
