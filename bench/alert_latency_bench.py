"""How long after a failure a team's webhook hears of it (issue 16, "Measured"): a real `cohort
server` (default flags but the heartbeat timeout), training processes of the real SDK, and a
real HTTP receiver registered as the project's webhook (tests/webhook_receiver.py). Per case,
the time from the failure to the webhook call for its alert (the receiver's clock, the same
machine's), medians of --reps:

  process  the training process is killed with SIGKILL; its agent lives on and ends the writer
           `crashed` (the default writer_state rule).
  node     the process and its private agent are killed together (a lost node): only the
           server's heartbeat timeout (--heartbeat-timeout, 10 s here) notices.
  hang     one of two ranks of a shared run is stopped with SIGSTOP (alive, heartbeating, no
           step); a `hung` rule with min_minutes 0.1 (6 s) and factor 3.

    python bench/alert_latency_bench.py [--reps 3]
"""
import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from _bench_server import BenchServer  # noqa: E402
from webhook_receiver import Receiver  # noqa: E402

PROJECT = "alert-latency"
HEARTBEAT_TIMEOUT_S = 10
HUNG_MIN_MINUTES = 0.1

VICTIM = """import sys, time
import cohort
r = cohort.init(project=sys.argv[1], id=sys.argv[2], settings=cohort.Settings(x_agent='private'))
while True:
    r.log({'loss': 1.0})
    time.sleep(0.05)
"""

RANK = """import os, sys, time
import cohort
project, run_id, label, stop = sys.argv[1:5]
r = cohort.init(project=project, id=run_id, settings=cohort.Settings(
    mode='shared', x_label=label, x_primary=label == 'rank_0'))
while not os.path.exists(stop):
    r.log({'loss': 1.0})
    time.sleep(0.1)
r.finish()
"""


def call(srv, method, path, body=None):
    req = urllib.request.Request(srv.url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + srv.api_key(),
                                          "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read() or b"{}")


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {what}")


def webhook_call(receiver, run_id, since):
    """The first 'opened' webhook call for an alert of `run_id` received after `since`: its time."""
    def find():
        with receiver.lock:
            calls = list(receiver.calls)
        for c in calls:
            body = json.loads(c["body"])
            if body.get("event") == "opened" and body["alert"]["run"] == run_id and c["t"] >= since:
                return c["t"]
        return None
    return wait_for(find, 120, f"the webhook call for {run_id}")


def with_children(pid):
    """`pid` and its child processes (the training process and the private agent it started:
    the agent runs in a session of its own, so a process group kill would miss it)."""
    out = [pid]
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # fields after the name: state ppid ...
            out.append(int(d.name))
    return out


def wait_points(srv, run_id):
    def keys():
        try:
            return srv.get(f"/api/v1/runs/{entity(srv)}/{PROJECT}/{run_id}/keys")["keys"]
        except urllib.error.HTTPError as e:
            if e.code == 404:  # the run is not there yet
                return None
            raise
    wait_for(keys, 60, f"points of {run_id}")


_entity = {}


def entity(srv):
    if srv not in _entity:
        _entity[srv] = srv.get("/api/v1/viewer")["entity"]
    return _entity[srv]


def kill_case(srv, receiver, run_id, whole_node):
    proc = srv.start_script(VICTIM, PROJECT, run_id)
    try:
        wait_points(srv, run_id)
        members = with_children(proc.pid) if whole_node else [proc.pid]
        t0 = time.time()
        for pid in members:
            os.kill(pid, signal.SIGKILL)
        proc.communicate()
        return webhook_call(receiver, run_id, t0) - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def hang_case(srv, receiver, run_id, tmp):
    stop = pathlib.Path(tmp) / f"stop-{run_id}"
    ranks = [srv.start_script(RANK, PROJECT, run_id, label, stop) for label in ("rank_0", "rank_1")]
    try:
        wait_points(srv, run_id)
        time.sleep(3)  # the job's step time is learned
        t0 = time.time()
        ranks[1].send_signal(signal.SIGSTOP)
        return webhook_call(receiver, run_id, t0) - t0
    finally:
        stop.write_text("")
        for p in ranks:
            p.send_signal(signal.SIGCONT)
        for p in ranks:
            try:
                p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    receiver = Receiver()
    receiver.start()
    with tempfile.TemporaryDirectory() as tmp, \
            BenchServer(tmp, server_args=["--heartbeat-timeout", str(HEARTBEAT_TIMEOUT_S)]) as srv:
        srv.run_script("import cohort\nr = cohort.init(project=%r, id='warmup')\nr.log({'x': 1})\n"
                       "r.finish()\n" % PROJECT)
        ent = entity(srv)
        call(srv, "POST", f"/api/v1/alert-webhooks/{ent}/{PROJECT}",
             {"name": "bench", "url": receiver.url, "format": "generic"})
        call(srv, "POST", f"/api/v1/alert-rules/{ent}/{PROJECT}",
             {"name": "hung", "kind": "hung", "level": "ERROR",
              "spec": {"factor": 3, "min_minutes": HUNG_MIN_MINUTES}})
        results = {"process": [], "node": [], "hang": []}
        for rep in range(args.reps):
            results["process"].append(kill_case(srv, receiver, f"proc{rep}", whole_node=False))
            results["node"].append(kill_case(srv, receiver, f"node{rep}", whole_node=True))
            results["hang"].append(hang_case(srv, receiver, f"hang{rep}", tmp))
            print(f"rep {rep}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in results.items()),
                  flush=True)
    receiver.stop()
    print(f"\nmedians of {args.reps} (failure -> webhook call):")
    print(f"| process killed (agent ends the writer) | {statistics.median(results['process']):.2f} s |")
    print(f"| node lost (heartbeat timeout {HEARTBEAT_TIMEOUT_S} s) | {statistics.median(results['node']):.2f} s |")
    print(f"| rank hung (minimum {HUNG_MIN_MINUTES * 60:.0f} s, factor 3) | {statistics.median(results['hang']):.2f} s |")


if __name__ == "__main__":
    main()
