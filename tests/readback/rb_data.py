"""Fixtures and data of the read-back suites: a real `cohort server` on a free port, runs
written into it by the real Python SDK (real node agent) in child processes, and the values the
tests expect (every logged value is a function of (writer, step), so each row read back can be
checked exactly). Test modules import the fixtures they use from here."""
import pathlib
import sys
import time

import pytest

_HERE = pathlib.Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE.parent / "distributed"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import dist_helpers  # noqa: E402  (fails with a build hint when the extension is missing)
from conftest import ServerProcess  # noqa: E402  (tests/conftest.py)

PROJECT = "rb"
SHARED_RANKS = 4
SHARED_STEPS = 300
PLAIN_STEPS = 100

PLAIN = f'''
import time, cohort
run = cohort.init(project="{PROJECT}", id="plain1", name="plain one", group="G1",
                  job_type="train", tags=["baseline"],
                  config={{"lr": 0.1, "optim": {{"name": "adam"}}}},
                  settings=cohort.Settings(x_stats_sampling_interval=0.2))
for s in range({PLAIN_STEPS}):
    run.log({{"loss": 1.0 / (s + 1), "acc": s / 100}})
    if s % 10 == 0:
        print(f"plain line {{s}}", flush=True)
print("warning: plain is done", flush=True)
time.sleep(1.0)  # a few system samples
run.summary["acc"] = 0.9
run.finish()
'''

FAILED = f'''
import cohort
run = cohort.init(project="{PROJECT}", id="failed1", name="failed one", group="G1",
                  job_type="eval", config={{"lr": 0.01}},
                  settings=cohort.Settings(x_stats_sampling_interval=0))
for s in range(10):
    run.log({{"loss": 2.0 + s, "odd,key": -s}})
run.summary["acc"] = 0.5
run.finish(exit_code=3)
'''

SHARED = f'''
import os, cohort
r = int(os.environ["RB_RANK"])
run = cohort.init(project="{PROJECT}", id=os.environ["RB_RUN"], group="DDP", job_type="ddp",
                  settings=cohort.Settings(mode="shared", x_label=f"rank_{{r}}",
                                           x_primary=r == 0, x_update_finish_state=r == 0,
                                           x_stats_sampling_interval=0))
if r == 0:
    run.config["world_size"] = {SHARED_RANKS}
for s in range({SHARED_STEPS}):
    row = {{"loss": r * 1000 + s, "acc": s / 1000}}
    if r == 0 and s % 10 == 0:
        row["val"] = -s
    run.log(row)
    if s % 100 == 0:
        print(f"rank {{r}} step {{s}}", flush=True)
run.finish()
'''

SECOND = f'''
import cohort
run = cohort.init(project="{PROJECT}", id="ddp2", group="DDP", job_type="ddp",
                  settings=cohort.Settings(x_stats_sampling_interval=0))
for s in range({SHARED_STEPS}):
    run.log({{"loss": 5000 + s}})
run.finish()
'''


def shared_loss(rank, step):
    return rank * 1000 + step


def run_ranks(client, code, run_id, ranks, extra_env=None):
    """Starts `ranks` processes of `code` (RB_RANK=r, RB_RUN=run_id) and waits for them."""
    path = client.tmp / f"shared_{run_id}.py"
    path.write_text(code)
    procs = []
    for r in range(ranks):
        env = {"RB_RANK": str(r), "RB_RUN": run_id}
        env.update(extra_env or {})
        procs.append(client.popen([path], env=env))
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, f"writer exit {p.returncode}\n{out[-2000:]}\n{err[-3000:]}"


def wait_points(client, run_id, expected, project=PROJECT, timeout=120):
    """Waits until the server holds `expected` user points and the run is no longer running."""
    view = client.run_view(run_id, project)

    def done():
        run = view.get()
        if run["state"] in ("absent", "running"):
            return False
        keys = client.get(view.path + "/keys")["keys"]
        return sum(k["count"] for k in keys if not k["key"].startswith("system/")) == expected

    dist_helpers.wait_until(done, timeout=timeout, what=f"{expected} points in run {run_id}")


def write_dataset(client):
    for code in (PLAIN, FAILED, SECOND):
        dist_helpers.assert_ok(client.python(code, timeout=120))
    run_ranks(client, SHARED, "ddp1", SHARED_RANKS)
    wait_points(client, "plain1", 2 * PLAIN_STEPS)
    wait_points(client, "failed1", 20)
    wait_points(client, "ddp2", SHARED_STEPS)
    wait_points(client, "ddp1", SHARED_RANKS * SHARED_STEPS * 2 + SHARED_STEPS // 10)
    # Console lines arrive with the last batches; the plain run's last line marks the end.
    plain = client.run_view("plain1", PROJECT)
    dist_helpers.wait_until(lambda: any("plain is done" in l["text"] for l in plain.console()),
                            timeout=30, what="the plain run's console lines")
    return {"entity": client.entity, "project": PROJECT, "written_at": time.time()}


@pytest.fixture(scope="module")
def rb_server(tmp_path_factory):
    s = ServerProcess(tmp_path_factory.mktemp("rb_home")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def rb_client(rb_server, tmp_path_factory):
    c = dist_helpers.Client(rb_server, tmp_path_factory.mktemp("rb_work"))
    yield c
    c.stop_agents()


@pytest.fixture(scope="module")
def dataset(rb_client):
    """The data set above, written once per module by the real SDK."""
    return write_dataset(rb_client)


@pytest.fixture(scope="module")
def api(rb_server, dataset):
    import cohort
    a = cohort.Api(base_url=rb_server.url, api_key=rb_server.config["api_key"])
    yield a
    a.close()
