"""The `gpu_underused` rule on real training processes (real SDK, real private agents sampling
the fake NVML of tests/fake_nvml, real server): of three ranks of one shared run, the one whose
GPUs report ~5% while the others report ~90% is alerted with its numbers and no other rank is;
the alert resolves when the ranks end. When every rank is idle, nothing is raised (`min_util`),
although a rule with a lower `min_util` does flag the least busy rank on the same samples."""
import pathlib
import signal
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from conftest import BUILD, ServerProcess  # noqa: E402
from dist_helpers import Client, wait_until  # noqa: E402

import pytest  # noqa: E402

PROJECT = "gpus"
FAKE_NVML = BUILD / "tests" / "fake_nvml" / "libnvidia-ml.so.1"

# Each rank has its own private agent, which inherits the rank's environment and so its fake
# NVML readings; it samples the GPUs every 0.5 s.
RANK = """import os, sys, time
import cohort
label, stop = sys.argv[1], sys.argv[2]
r = cohort.init(project='{project}', id='job', settings=cohort.Settings(
    mode='shared', x_label=label, x_primary=label == 'rank_0', x_agent='private',
    x_stats_sampling_interval=0.5))
step = 0
while not os.path.exists(stop):
    r.log({{'loss': 1.0 / (step + 1)}})
    step += 1
    time.sleep(0.05)
r.finish()
"""


@pytest.fixture
def client(tmp_path):
    if not FAKE_NVML.exists():
        pytest.fail(f"build the fake_nvml target first: {FAKE_NVML} is missing")
    server = ServerProcess(tmp_path / "srv", ["--sweep-interval", "1"]).start()
    c = Client(server, tmp_path)
    yield c
    c.stop_agents()
    server.stop()


def alerts(client, **query):
    return client.get(f"/api/v1/alerts/{client.entity}/{PROJECT}", **query)["alerts"]


def gpu_rule(client, name, **spec):
    status, rule = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": name, "kind": "gpu_underused", "spec": {"for_minutes": 0, **spec}})
    assert status == 201, rule
    return rule


def start_ranks(client, utils):
    """One process per label, its two fake GPUs at utils[label] percent."""
    script = client.tmp / "rank.py"
    script.write_text(RANK.format(project=PROJECT))
    stop = client.tmp / "stop"
    procs = {}
    try:
        for label, util in utils.items():
            procs[label] = client.popen([script, label, stop], env={
                "COHORT_NVML_LIBRARY": str(FAKE_NVML), "FAKE_NVML_DEVICE_COUNT": "2",
                "FAKE_NVML_UTIL_GPU_0": str(util), "FAKE_NVML_UTIL_GPU_1": str(util)})
    except BaseException:
        stop_ranks(procs, stop)
        raise
    return procs, stop


def stop_ranks(procs, stop):
    stop.write_text("")
    failed = []
    for label, p in procs.items():
        try:
            out, err = p.communicate(timeout=30)
        except Exception:
            p.send_signal(signal.SIGKILL)
            out, err = p.communicate()
            failed.append((label, "killed", err[-2000:]))
            continue
        if p.returncode != 0:
            failed.append((label, p.returncode, err[-2000:]))
    assert not failed, failed


def gpu_samples(view, labels):
    """{label: number of its gpu.0.gpu points (system/gpu.0.gpu as stored)}"""
    return {label: c for (key, label), c in view.system(labels=labels).items()
            if key == "gpu.0.gpu"}


def wait_for_more_samples(view, labels, more=4):
    """Waits until every label has `more` GPU samples (0.5 s each) beyond what it has now: a few
    more sweeps (1 s each) have evaluated every rank's samples."""
    now = gpu_samples(view, labels)
    wait_until(lambda: (n := gpu_samples(view, labels)) and
               all(n.get(label, 0) >= now.get(label, 0) + more for label in labels),
               timeout=20, what=lambda: f"more GPU samples than {now}")


def test_the_rank_with_idle_gpus_is_alerted_with_its_numbers_and_resolved_at_the_end(client):
    rule = gpu_rule(client, "idle gpus")  # ratio 0.5, min_util 50, min_writers 2
    status, err = client.api.post(f"/api/v1/alert-rules/{client.entity}/{PROJECT}", {
        "name": "bad", "kind": "gpu_underused", "spec": {"ratio": 1}})
    assert status == 400 and err["field"] == "spec.ratio", err
    utils = {"rank_0": 90, "rank_1": 88, "rank_2": 5}
    procs, stop = start_ranks(client, utils)
    try:
        found = wait_until(lambda: [a for a in alerts(client) if a["rule_id"] == rule["id"]],
                           timeout=40, what="the gpu_underused alert")
        assert len(found) == 1, found
        a = found[0]
        assert (a["writer"], a["state"], a["level"]) == ("rank_2", "open", "WARN"), a
        assert a["title"] == "writer rank_2 GPUs at 5% (others 89%)", a
        ev = a["evidence"]
        assert ev["gpu_util"] == pytest.approx(5), ev
        assert ev["others_median"] == pytest.approx(89), ev  # median of 90 and 88
        assert ev["ratio"] == pytest.approx(5 / 89), ev
        assert (ev["threshold_ratio"], ev["min_util"]) == (0.5, 50), ev
        assert ev["writers"] == 3 and ev["samples"] >= 1, ev
        assert ev["window_ms"] == 300000 and ev["flagged_since_ms"] > 0, ev
        # More sweeps over every rank's samples: still that one alert, none for rank_0 or rank_1
        # (each of them is above the others' median, 47 or 46.5 < min_util anyway).
        view = client.run_view("job", project=PROJECT)
        wait_for_more_samples(view, list(utils))
        mine = [x for x in alerts(client) if x["rule_id"] == rule["id"]]
        assert [(x["id"], x["writer"], x["state"]) for x in mine] == [(a["id"], "rank_2", "open")]
    finally:
        stop_ranks(procs, stop)
    # The writers ended: the alert resolves at the next sweep.
    wait_until(lambda: [x for x in alerts(client, state="resolved") if x["id"] == a["id"]],
               timeout=15, what="the gpu_underused alert resolved")
    assert [x["writer"] for x in alerts(client) if x["rule_id"] == rule["id"]] == ["rank_2"]


def test_an_idle_job_raises_nothing(client):
    rule = gpu_rule(client, "idle gpus")  # min_util 50: every rank at ~5% is an idle job
    # The same samples with min_util 2 do flag the least busy rank: the samples reached the
    # engine and were evaluated, only min_util holds the first rule back.
    control = gpu_rule(client, "control", min_util=2)
    utils = {"rank_0": 6, "rank_1": 5, "rank_2": 2}
    procs, stop = start_ranks(client, utils)
    try:
        found = wait_until(lambda: [a for a in alerts(client) if a["rule_id"] == control["id"]],
                           timeout=40, what="the control rule's alert")
        assert [(x["writer"], x["evidence"]["others_median"]) for x in found] == [
            ("rank_2", pytest.approx(5.5))], found
        view = client.run_view("job", project=PROJECT)
        wait_for_more_samples(view, list(utils))
        assert [x for x in alerts(client) if x["rule_id"] == rule["id"]] == []
    finally:
        stop_ranks(procs, stop)
    assert [x for x in alerts(client) if x["rule_id"] == rule["id"]] == []
