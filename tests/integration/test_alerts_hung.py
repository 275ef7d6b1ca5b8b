"""The `hung` rule on real training processes (real SDK, real agent, real server): a rank
stopped with SIGSTOP while the other goes on is alerted once the rule's minimum passes and
resolved when it continues; two ranks that pause together for an evaluation shorter than the
minimum raise nothing."""
import os
import pathlib
import signal
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from conftest import ServerProcess  # noqa: E402
from dist_helpers import Client, wait_until  # noqa: E402

import pytest  # noqa: E402

PROJECT = "hangs"

RANK = """import os, sys, time
import cohort
label, stop, eval_at, eval_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
r = cohort.init(project='{project}', id='job', settings=cohort.Settings(
    mode='shared', x_label=label, x_primary=label == 'rank_0'))
step = 0
while not os.path.exists(stop):
    r.log({{'loss': 1.0 / (step + 1)}})
    step += 1
    if step == eval_at:
        time.sleep(eval_s)  # an evaluation: no step for a while
    time.sleep(0.1)
r.finish()
"""


@pytest.fixture
def client(tmp_path):
    server = ServerProcess(tmp_path / "srv", ["--sweep-interval", "1"]).start()
    c = Client(server, tmp_path)
    yield c
    c.stop_agents()
    server.stop()


def hung_rule(client, min_minutes):
    status, rule = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": "rank hung", "kind": "hung", "spec": {"factor": 3, "min_minutes": min_minutes},
        "level": "ERROR"})
    assert status == 201, rule
    return rule


def start_ranks(client, eval_at=-1, eval_s=0.0):
    script = client.tmp / "rank.py"
    script.write_text(RANK.format(project=PROJECT))
    stop = client.tmp / "stop"
    procs = {label: client.popen([script, label, stop, eval_at, eval_s])
             for label in ("rank_0", "rank_1")}
    return procs, stop


def alerts(client, **query):
    return client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}", **query)["alerts"]


def stop_ranks(procs, stop):
    stop.write_text("")
    for p in procs.values():
        p.send_signal(signal.SIGCONT)
    for p in procs.values():
        try:
            out, err = p.communicate(timeout=60)
        except Exception:
            p.kill()
            p.communicate()
            raise
        assert p.returncode == 0, (out, err)


def test_a_stopped_rank_is_hung_after_the_minimum_and_resolved_when_it_continues(client):
    rule = hung_rule(client, min_minutes=0.1)  # 6 s; the job's step time is ~0.1 s
    procs, stop = start_ranks(client)
    try:
        view = client.run_view("job", project=PROJECT)
        wait_until(lambda: len(view.history(keys=["loss"])) == 2 and
                   all(len(p) > 20 for p in view.history(keys=["loss"]).values()),
                   timeout=60, what="both ranks stepping")
        os.kill(procs["rank_1"].pid, signal.SIGSTOP)
        stopped = time.time()
        found = wait_until(lambda: [a for a in alerts(client) if a["rule_id"] == rule["id"]],
                           timeout=30, what="the hung alert")
        seen = time.time()
        assert len(found) == 1
        a = found[0]
        assert (a["writer"], a["level"], a["state"]) == ("rank_1", "ERROR", "open")
        assert a["title"] == "writer rank_1 hung"
        # Not before the minimum (the last batch may have left up to ~1 s before the stop).
        assert seen - stopped >= 4.5
        assert a["evidence"]["threshold_ms"] == 6000
        assert a["evidence"]["stalled_ms"] > 6000
        assert 0 < a["evidence"]["step_time_ms"] < 1000
        w = a["evidence"]["writers"][0]
        assert w["writer"] == "rank_1" and w["last_step"] >= 20, a  # > 20 points: steps 0..20 at least
        procs["rank_1"].send_signal(signal.SIGCONT)
        wait_until(lambda: [x for x in alerts(client, state="resolved")
                            if x["id"] == a["id"]], timeout=30, what="the hung alert resolved")
    finally:
        stop_ranks(procs, stop)
    # rank_0 was never hung, nor the run as a whole.
    assert [x["writer"] for x in alerts(client) if x["rule_id"] == rule["id"]] == ["rank_1"]


def test_an_evaluation_shorter_than_the_minimum_is_not_hung(client):
    rule = hung_rule(client, min_minutes=0.25)  # 15 s
    procs, stop = start_ranks(client, eval_at=30, eval_s=8.0)  # both ranks pause 8 s
    try:
        view = client.run_view("job", project=PROJECT)
        # Past the evaluation: both ranks beyond step 40.
        wait_until(lambda: (h := view.history(keys=["loss"])) and len(h) == 2 and
                   all(len(p) > 40 for p in h.values()), timeout=90, what="steps after the eval")
    finally:
        stop_ranks(procs, stop)
    assert [x for x in alerts(client) if x["rule_id"] == rule["id"]] == []
