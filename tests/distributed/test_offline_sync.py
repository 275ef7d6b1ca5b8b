"""`python train.py && cohort sync` for an offline run: the agent that served the run may still
hold the writer for a moment after the script exited; `cohort sync` waits for it to let go
(it skipped the writer, "in use by a live agent or training process", exit 1)."""
import subprocess

from dist_helpers import client, wait_until  # noqa: F401

OFFLINE = r"""
import cohort
run = cohort.init(project="offline-sync", mode="offline")
for step in range(40):
    run.log({"loss": float(step)})
run.finish()
print("RUN", run.id)
"""


def test_sync_right_after_an_offline_script_waits_for_its_agent(client):
    proc = client.python(OFFLINE)
    assert proc.returncode == 0, proc.stderr[-4000:]
    run_id = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RUN ")][0]
    sync = subprocess.run([str(client.env["COHORT_BIN"]), "sync"], env=client.env,
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode == 0, sync.stderr[-4000:]
    assert "in use" not in sync.stderr, sync.stderr
    view = client.run_view(run_id, project="offline-sync")
    points = wait_until(lambda: view.history(keys=["loss"]), what="the synced history")
    assert [v for (_, v) in next(iter(points.values()))] == [float(s) for s in range(40)]
    assert view.get()["state"] == "finished"
