"""Alert rules evaluated by the real server on what the real Python SDK sends (cohort.init /
log / finish through a real agent): a NaN loss opens an alert with its evidence, a threshold
rule created through the API fires and resolves, and a training process killed with SIGKILL
gets a `crashed` alert once the server's heartbeat timeout passes."""
import os
import pathlib
import signal
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from conftest import ServerProcess  # noqa: E402
from dist_helpers import Client, assert_ok, wait_until  # noqa: E402

import pytest  # noqa: E402

PROJECT = "alerting"
HEADER = "import math, os, sys, time\nimport cohort\n"


@pytest.fixture
def client(tmp_path):
    server = ServerProcess(tmp_path / "srv").start()
    c = Client(server, tmp_path)
    yield c
    c.stop_agents()
    server.stop()


@pytest.fixture
def fast_reaper_client(tmp_path):
    # Writers without a heartbeat (or batch) for 3 s are crashed; the sweep runs every second.
    server = ServerProcess(tmp_path / "srv",
                           ["--heartbeat-timeout", "3", "--sweep-interval", "1"]).start()
    c = Client(server, tmp_path)
    yield c
    c.stop_agents()
    server.stop()


def alerts(client, **query):
    return client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}", **query)["alerts"]


def test_nan_loss_opens_an_alert_with_its_evidence(client):
    assert_ok(client.python(HEADER + (
        f"r = cohort.init(project='{PROJECT}', id='nanrun')\n"
        "for i in range(5):\n    r.log({'loss': 1.0 / (i + 1)})\n"
        "r.log({'loss': float('nan')})\n"
        "r.log({'acc': 0.5})\n"
        "r.finish()\n")))
    found = wait_until(lambda: [a for a in alerts(client) if a["condition"].endswith(":loss")],
                       what="a NaN alert")
    assert len(found) == 1
    a = found[0]
    assert a["run"] == "nanrun" and a["source"] == "rule" and a["level"] == "WARN"
    assert a["state"] == "open"  # nothing finite came after the NaN
    assert a["evidence"]["key"] == "loss"
    assert a["evidence"]["value"] == "NaN"
    assert a["evidence"]["step"] == 5
    assert a["writer"]  # the writer that logged it
    # The run finished cleanly: no writer_state alert, and acc raised nothing.
    assert len(alerts(client)) == 1
    status, rules = client.api.get(f"/api/v1/alert-rules/{client.entity}/{PROJECT}")
    assert status == 200
    nonfinite = next(r for r in rules["rules"] if r["kind"] == "metric_nonfinite")
    assert a["rule_id"] == nonfinite["id"]


def test_threshold_rule_created_through_the_api_fires_and_resolves(client):
    status, rule = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": "loss too high", "kind": "metric_threshold",
        "spec": {"key": "loss", "op": ">", "value": 10, "after_step": 2}, "level": "ERROR"})
    assert status == 201, rule
    # Steps 0 and 1 are over 10 but before after_step; step 3 crosses. The process waits until
    # the alert is open, then logs steps back under 10 and finishes.
    resume = client.tmp / "resume"
    script = client.tmp / "threshold.py"
    script.write_text(HEADER + (
        f"r = cohort.init(project='{PROJECT}', id='threshrun')\n"
        "for v in (50.0, 40.0, 5.0, 25.0):\n    r.log({'loss': v})\n"
        f"while not os.path.exists({str(resume)!r}):\n    time.sleep(0.05)\n"
        "r.log({'loss': 30.0})\n"
        "r.log({'loss': 2.0})\n"
        "r.finish()\n"))
    proc = client.popen([script])
    try:
        opened = wait_until(lambda: [a for a in alerts(client) if a["rule_id"] == rule["id"]],
                            timeout=60, what="the threshold alert")
        assert len(opened) == 1
        a = opened[0]
        assert (a["state"], a["level"], a["run"]) == ("open", "ERROR", "threshrun")
        assert a["evidence"]["key"] == "loss" and a["evidence"]["threshold"] == 10
        assert a["evidence"]["op"] == ">"
        assert (a["evidence"]["step"], a["evidence"]["value"]) == (3, 25.0)
    finally:
        resume.write_text("")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    done = wait_until(lambda: [a for a in alerts(client, state="resolved")
                               if a["rule_id"] == rule["id"]], timeout=60,
                      what="the threshold alert resolved")
    assert done[0]["id"] == a["id"] and done[0]["resolved_ms"] >= a["opened_ms"]
    # One alert for the whole episode (step 4's 30.0 bumped the open one, never a second).
    assert len([x for x in alerts(client) if x["rule_id"] == rule["id"]]) == 1


def start_victim(client):
    """A training process with a private agent (a child process), logging until killed; returns
    its Popen (a session of its own) and its writer's label once points arrived."""
    script = client.tmp / "victim.py"
    script.write_text(HEADER + (
        f"r = cohort.init(project='{PROJECT}', id='killed', "
        "settings=cohort.Settings(x_agent='private'))\n"
        "while True:\n    r.log({'loss': 1.0})\n    time.sleep(0.05)\n"))
    proc = client.popen([script], start_new_session=True)
    view = client.run_view("killed", project=PROJECT)
    wait_until(lambda: view.history(keys=["loss"]), timeout=60, what="points of the run")
    writers = view.writers()
    assert len(writers) == 1
    label, w = next(iter(writers.items()))
    assert w["state"] == "running"
    assert not alerts(client)
    return proc, view, label


def crashed_alert(client, view, label, killed_ms, timeout):
    crashed = wait_until(lambda: [a for a in alerts(client) if a["writer"] == label],
                         timeout=timeout, what="the crashed alert")
    assert len(crashed) == 1
    a = crashed[0]
    assert (a["run"], a["level"], a["source"], a["state"]) == ("killed", "ERROR", "rule", "open")
    assert a["title"] == f"writer {label} crashed"
    assert a["evidence"]["state"] == "crashed"
    assert a["evidence"]["exit_code"] is None
    assert a["evidence"]["last_heartbeat_ms"] <= killed_ms + 1000
    assert view.writers()[label]["state"] == "crashed"
    return a


def test_node_killed_with_sigkill_gets_a_crashed_alert_after_the_heartbeat_timeout(
        fast_reaper_client):
    client = fast_reaper_client
    proc, view, label = start_victim(client)
    # The training process and its agent die together (a node lost): nobody says goodbye, only
    # the server's heartbeat timeout (3 s) notices.
    agents = client.agent_pids()
    assert agents, "no agent process found"
    killed_ms = int(time.time() * 1000)
    os.killpg(proc.pid, signal.SIGKILL)
    for pid in agents:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.communicate()
    a = crashed_alert(client, view, label, killed_ms, timeout=20)
    assert a["opened_ms"] - killed_ms >= 2500  # the timeout passed first
    assert a["opened_ms"] - killed_ms < 3000 + 2 * 1000 + 2000  # + two sweeps, + slack
    assert a["evidence"]["last_heartbeat_ms"] >= killed_ms - 1000


def test_training_process_killed_with_sigkill_gets_a_crashed_alert_from_its_agent(
        fast_reaper_client):
    client = fast_reaper_client
    proc, view, label = start_victim(client)
    killed_ms = int(time.time() * 1000)
    os.kill(proc.pid, signal.SIGKILL)  # its agent lives on and reports the writer crashed
    proc.communicate()
    a = crashed_alert(client, view, label, killed_ms, timeout=20)
    assert a["opened_ms"] - killed_ms < 10_000
