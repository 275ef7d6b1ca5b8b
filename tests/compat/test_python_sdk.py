"""The vendor's Python SDK (`wandb` from PyPI, installed in .venv) as a real, unchanged client
of Cohort: pointed at the server with WANDB_BASE_URL / WANDB_API_KEY and nothing else, then
checked through Cohort's own API.

Shared mode (several processes writing one run) needs the SDK's Go core, which is the only
backend of current releases: mode="shared" with x_label, x_primary and, on workers,
x_update_finish_state=False (docs/compat.md)."""
import pathlib
import subprocess
import sys
import time

import pytest

from .compat_helpers import run_python, sdk_env, wandb_version

pytestmark = pytest.mark.timeout(600)

PLAIN = r'''
import sys, wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id, name="plain-run", group="grp", job_type="train",
                 config={"lr": 0.01, "batch": 32, "opt": {"name": "adam"}}, tags=["t1", "t2"],
                 notes="a plain run", settings=wandb.Settings(x_stats_sampling_interval=1.0))
for i in range(20):
    run.log({"loss": 1.0 / (i + 1), "acc": i / 20, "nested": {"lr": 0.01}})
print("hello from stdout")
print("oops on stderr", file=sys.stderr)
run.summary["best_acc"] = 0.95
run.finish()
print("RUN", run.entity, run.project, run.id)
'''

PER_PROCESS = r'''
import sys, wandb
rank, run_id, project = int(sys.argv[1]), sys.argv[2], sys.argv[3]
run = wandb.init(project=project, id=run_id, group="per-process", job_type="worker",
                 config={"rank": rank})
for i in range(10):
    run.log({"loss": rank * 100 + i})
print(f"rank {rank} done")
run.finish()
'''

SHARED = r'''
import pathlib, sys, time, wandb
rank, run_id, project, sync = int(sys.argv[1]), sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
steps, exit_code = int(sys.argv[5]), int(sys.argv[6])
label, primary = f"rank_{rank}", rank == 0
extra = {} if primary else {"x_update_finish_state": False}
settings = wandb.Settings(mode="shared", x_label=label, x_primary=primary,
                          x_stats_sampling_interval=1.0, **extra)
run = wandb.init(project=project, id=run_id, group="ddp", job_type="shared",
                 config={"world_size": 3} if primary else None, settings=settings)
for i in range(steps):
    run.log({"loss": rank * 1000 + i, "rank": rank})
    print(f"{label} step {i}")
    time.sleep(0.02)
(sync / f"{label}.logged").touch()
if primary:  # the primary ends the run once the workers are through (or were told to wait)
    deadline = time.time() + 240
    while time.time() < deadline and not (sync / "primary.go").exists():
        time.sleep(0.1)
else:
    while not (sync / f"{label}.go").exists():
        time.sleep(0.1)
run.finish(exit_code=exit_code)
(sync / f"{label}.done").touch()
'''


def wait_file(path, timeout=240, procs=()):
    deadline = time.monotonic() + timeout
    while not path.exists():
        for p in procs:
            if p.poll() not in (None, 0):
                out, err = p.communicate()
                pytest.fail(f"client exited with {p.returncode}:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.1)


def finish(proc, timeout=240):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"client failed ({proc.returncode}):\n{out}\n{err}"
    return out


def history(api, entity, project, run, key):
    status, body = api.get(f"/api/v1/runs/{entity}/{project}/{run}/history?keys={key}")
    assert status == 200, body
    return {s["writer"]: s["points"] for s in body["series"]}


def test_sdk_version_is_recorded():
    assert wandb_version()


def test_plain_run(server, api, entity, tmp_path):
    env = sdk_env(server, tmp_path)
    proc = run_python(PLAIN, env, tmp_path, args=("plain01", "sdkproj"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"RUN {entity} sdkproj plain01" in proc.stdout

    status, run = api.get(f"/api/v1/runs/{entity}/sdkproj/plain01")
    assert status == 200, run
    assert run["name"] == "plain-run"
    assert (run["group"], run["job_type"]) == ("grp", "train")
    assert run["tags"] == ["t1", "t2"] and run["notes"] == "a plain run"
    assert run["config"] == {"lr": 0.01, "batch": 32, "opt": {"name": "adam"}}
    assert "_wandb" not in run["config"]
    assert run["metadata"]["wandb"]["cli_version"] == wandb_version()  # telemetry kept apart
    assert run["state"] == "finished" and run["exit_code"] == 0
    assert run["summary"]["best_acc"] == 0.95 and run["summary"]["loss"] == 0.05
    assert not any(k.startswith("_") for k in run["summary"])

    loss = history(api, entity, "sdkproj", "plain01", "loss")
    assert len(loss) == 1
    (label, pts), = loss.items()
    assert [p[0] for p in pts] == list(range(20))
    assert [p[2] for p in pts] == pytest.approx([1.0 / (i + 1) for i in range(20)], rel=1e-12)
    assert history(api, entity, "sdkproj", "plain01", "nested.lr")[label][0][2] == 0.01
    status, writers = api.get(f"/api/v1/runs/{entity}/sdkproj/plain01/writers")
    (w,) = writers["writers"]
    assert w["label"] == label and w["primary"] and w["state"] == "finished"

    status, system = api.get(f"/api/v1/runs/{entity}/sdkproj/plain01/system")
    assert status == 200 and system["series"], "no system metrics arrived"
    assert all(s["writer"] == label for s in system["series"])
    status, lines = api.get(f"/api/v1/runs/{entity}/sdkproj/plain01/console")
    texts = [(l["stream"], l["text"]) for l in lines["lines"]]
    assert ("stdout", "hello from stdout") in texts
    assert ("stderr", "oops on stderr") in texts

    status, files = api.get(f"/api/v1/runs/{entity}/sdkproj/plain01/files")
    names = {f["name"] for f in files["files"]}
    assert {"config.yaml", "wandb-summary.json", "wandb-metadata.json"} <= names


def test_one_run_per_process_in_a_group(server, api, entity, tmp_path):
    procs = []
    for rank in range(3):
        d = tmp_path / f"p{rank}"
        d.mkdir()
        (d / "client.py").write_text(PER_PROCESS)
        procs.append(subprocess.Popen(
            [sys.executable, str(d / "client.py"), str(rank), f"pp{rank}", "groupproj"],
            cwd=d, env=sdk_env(server, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    for p in procs:
        finish(p)
    status, runs = api.get("/api/v1/runs/" + entity + "/groupproj?group=per-process")
    assert status == 200 and runs["total"] == 3
    for run in runs["runs"]:
        rank = run["config"]["rank"]
        assert run["id"] == f"pp{rank}" and run["job_type"] == "worker"
        assert run["state"] == "finished"
        (pts,) = history(api, entity, "groupproj", run["id"], "loss").values()
        assert [p[2] for p in pts] == [rank * 100 + i for i in range(10)]
    status, groups = api.get(f"/api/v1/groups/{entity}/groupproj")
    (g,) = groups["groups"]
    assert g["group"] == "per-process" and g["runs"] == 3 and g["states"] == {"finished": 3}


def start_shared(server, tmp_path, rank, run_id, sync, steps=30, exit_code=0):
    d = tmp_path / f"rank{rank}"
    d.mkdir(exist_ok=True)
    (d / "client.py").write_text(SHARED)
    return subprocess.Popen(
        [sys.executable, str(d / "client.py"), str(rank), run_id, "sharedproj", str(sync),
         str(steps), str(exit_code)],
        cwd=d, env=sdk_env(server, d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_shared_mode_three_processes(server, api, entity, tmp_path):
    sync = tmp_path / "sync"
    sync.mkdir()
    steps = 30
    primary = start_shared(server, tmp_path, 0, "shared01", sync, steps)
    worker1 = start_shared(server, tmp_path, 1, "shared01", sync, steps)
    # The second worker joins late: after the primary has logged all its rows.
    wait_file(sync / "rank_0.logged", procs=[primary, worker1])
    worker2 = start_shared(server, tmp_path, 2, "shared01", sync, steps)
    for rank, proc in ((1, worker1), (2, worker2)):
        wait_file(sync / f"rank_{rank}.logged", procs=[proc])
        (sync / f"rank_{rank}.go").touch()
        finish(proc)
    # Workers are done; the run is still the primary's.
    status, run = api.get(f"/api/v1/runs/{entity}/sharedproj/shared01")
    assert run["state"] == "running"
    (sync / "primary.go").touch()
    finish(primary)

    status, run = api.get(f"/api/v1/runs/{entity}/sharedproj/shared01")
    assert run["state"] == "finished" and run["exit_code"] == 0
    assert run["config"] == {"world_size": 3}
    assert (run["group"], run["job_type"]) == ("ddp", "shared")
    status, body = api.get(f"/api/v1/runs/{entity}/sharedproj/shared01/writers")
    writers = {w["label"]: w for w in body["writers"]}
    assert sorted(writers) == ["rank_0", "rank_1", "rank_2"]
    assert writers["rank_0"]["primary"] and writers["rank_0"]["state"] == "finished"
    for rank in (1, 2):
        assert not writers[f"rank_{rank}"]["primary"]
        assert not writers[f"rank_{rank}"]["update_finish_state"]
        # Workers send no exit code; uploading their console log at exit ends them.
        assert writers[f"rank_{rank}"]["state"] == "finished"
        assert writers[f"rank_{rank}"]["exit_code"] is None

    loss = history(api, entity, "sharedproj", "shared01", "loss")
    assert sorted(loss) == ["rank_0", "rank_1", "rank_2"]
    for rank in range(3):
        pts = loss[f"rank_{rank}"]  # every writer's rows, none overwritten
        assert [p[0] for p in pts] == list(range(steps)), rank
        assert [p[2] for p in pts] == [rank * 1000 + i for i in range(steps)], rank
        status, system = api.get(
            f"/api/v1/runs/{entity}/sharedproj/shared01/system?labels=rank_{rank}")
        assert system["series"], f"no system metrics for rank_{rank}"
        assert {s["writer"] for s in system["series"]} == {f"rank_{rank}"}
        status, lines = api.get(
            f"/api/v1/runs/{entity}/sharedproj/shared01/console?labels=rank_{rank}&limit=5000")
        texts = [l["text"] for l in lines["lines"]]
        assert [t for t in texts if "step" in t] == [f"rank_{rank} step {i}" for i in range(steps)]


def test_shared_run_state_follows_the_primary(server, api, entity, tmp_path):
    sync = tmp_path / "sync"
    sync.mkdir()
    primary = start_shared(server, tmp_path, 0, "shared02", sync, steps=5, exit_code=1)
    worker = start_shared(server, tmp_path, 1, "shared02", sync, steps=5)
    wait_file(sync / "rank_1.logged", procs=[primary, worker])
    (sync / "primary.go").touch()
    finish(primary)  # the primary fails while a worker still runs
    status, run = api.get(f"/api/v1/runs/{entity}/sharedproj/shared02")
    assert run["state"] == "failed" and run["exit_code"] == 1
    (sync / "rank_1.go").touch()
    finish(worker)
    status, run = api.get(f"/api/v1/runs/{entity}/sharedproj/shared02")
    assert run["state"] == "failed"  # a worker never ends (or revives) the run
