"""The `straggler` rule on real training processes (real SDK, real agent, real server): of four
ranks of one shared run, one slowed by a longer sleep per step is alerted with its numbers (step
time, ratio, z) and no other rank is; the alert resolves when the ranks end."""
import pathlib
import signal
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from conftest import ServerProcess  # noqa: E402
from dist_helpers import Client, wait_until  # noqa: E402

import pytest  # noqa: E402

PROJECT = "slow"

RANK = """import os, sys, time
import cohort
label, stop, sleep_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = cohort.init(project='{project}', id='job', settings=cohort.Settings(
    mode='shared', x_label=label, x_primary=label == 'rank_0'))
step = 0
while not os.path.exists(stop):
    r.log({{'loss': 1.0 / (step + 1)}})
    step += 1
    time.sleep(sleep_s)
r.finish()
"""


@pytest.fixture
def client(tmp_path):
    server = ServerProcess(tmp_path / "srv", ["--sweep-interval", "1"]).start()
    c = Client(server, tmp_path)
    yield c
    c.stop_agents()
    server.stop()


def alerts(client, **query):
    return client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}", **query)["alerts"]


def test_a_rank_slowed_by_sleep_is_a_straggler_alert_with_its_numbers(client):
    status, rule = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": "slow rank", "kind": "straggler", "spec": {"window": 20, "for_minutes": 0.05}})
    assert status == 201, rule
    # Refused with the field named.
    status, err = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": "bad", "kind": "straggler", "spec": {"ratio": 0.5}})
    assert status == 400 and err["field"] == "spec.ratio", err
    script = client.tmp / "rank.py"
    script.write_text(RANK.format(project=PROJECT))
    stop = client.tmp / "stop"
    sleeps = {"rank_0": 0.05, "rank_1": 0.05, "rank_2": 0.05, "rank_3": 0.25}
    procs = {label: client.popen([script, label, stop, s]) for label, s in sleeps.items()}
    try:
        found = wait_until(lambda: [a for a in alerts(client) if a["rule_id"] == rule["id"]],
                           timeout=90, what="the straggler alert")
        assert len(found) == 1, found
        a = found[0]
        assert (a["writer"], a["state"], a["level"]) == ("rank_3", "open", "WARN"), a
        assert a["title"].startswith("writer rank_3 straggles"), a
        ev = a["evidence"]
        assert ev["step_time_source"] == "timestamps"
        assert ev["step_time_ms"] >= 200, ev
        assert ev["median_step_time_ms"] < 150, ev
        assert ev["ratio"] >= 2 and ev["z"] >= ev["thresholds"]["z"], ev
        assert ev["thresholds"]["window"] == 20 and ev["writers"] == 4, ev
        assert ev["reasons"], ev
    finally:
        stop.write_text("")
        for p in procs.values():
            try:
                out, err = p.communicate(timeout=60)
            except Exception:
                p.send_signal(signal.SIGKILL)
                p.communicate()
                raise
            assert p.returncode == 0, (out, err)
    # The ranks ended: the alert resolves at the next sweep; no other rank was ever flagged.
    wait_until(lambda: [x for x in alerts(client, state="resolved") if x["id"] == a["id"]],
               timeout=30, what="the straggler alert resolved")
    assert [x["writer"] for x in alerts(client) if x["rule_id"] == rule["id"]] == ["rank_3"]
