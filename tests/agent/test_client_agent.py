"""The C++ client library and the node agent against the real `cohort server` binary.

Each test runs examples/cpp/train.cc (target cohort_example_cpp) as the training process, with a
private HOME, XDG_RUNTIME_DIR (so a private agent socket) and data directory. The agent is
`cohort agent` when the CLI has that subcommand, else the stand-in binary of src/agent
(cohort_agent_for_test). COHORT_CLIENT_BUILD_DIR may point at another build tree for the client
binaries (default: the same as COHORT_BUILD_DIR).
"""
import json
import math
import os
import pathlib
import signal
import socket
import subprocess
import time

import pytest

from conftest import BUILD, COHORT_BIN, ServerProcess, project_version, wait_for

CLIENT_BUILD = pathlib.Path(os.environ.get("COHORT_CLIENT_BUILD_DIR", BUILD))
EXAMPLE = CLIENT_BUILD / "src" / "client" / "cohort_example_cpp"
STAND_IN = CLIENT_BUILD / "src" / "agent" / "cohort_agent_for_test"



@pytest.fixture(autouse=True)
def _example_built():
    assert EXAMPLE.exists(), f"{EXAMPLE} is missing: build the project (scripts/build.sh)"


def cli_has(subcommand):
    if not COHORT_BIN.exists():
        return False
    out = subprocess.run([str(COHORT_BIN), "--help"], capture_output=True, text=True).stdout
    return any(line.strip().startswith(subcommand + " ") for line in out.splitlines())


AGENT_BIN = COHORT_BIN if cli_has("agent") else STAND_IN
SYNC_BIN = COHORT_BIN if cli_has("sync") else STAND_IN


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """Environment of a training process next to `server` (its HOME holds the server's key)."""

    def __init__(self, home, server=None, **env):
        self.home = pathlib.Path(home)
        self.env = dict(os.environ, HOME=str(self.home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
                        XDG_RUNTIME_DIR=str(self.home / "run"), COHORT_BIN=str(AGENT_BIN),
                        COHORT_PROJECT="e2e", COHORT_AGENT_IDLE_S="5")
        for k in ("COHORT_AGENT_SOCKET", "COHORT_DIR", "COHORT_RUN_ID", "COHORT_MODE", "RANK",
                  "TORCHELASTIC_RUN_ID", "COHORT_BASE_URL", "COHORT_API_KEY"):
            self.env.pop(k, None)
        self.env.update(env)

    def train(self, *args, timeout=60, **env):
        e = dict(self.env, **env)
        return subprocess.run([str(EXAMPLE), *args], env=e, capture_output=True, text=True,
                              timeout=timeout)

    def start(self, *args, **env):
        e = dict(self.env, **env)
        return subprocess.Popen([str(EXAMPLE), *args], env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def agent_pid(self):
        lock = self.home / "run" / "cohort" / "agent.lock"
        try:
            pid = int(lock.read_text().strip() or 0)
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return 0

    def stop_agent(self):
        pid = self.agent_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)


class FixedPortServer(ServerProcess):
    """`cohort server` on a given port (so that it can be restarted where clients expect it)."""

    def __init__(self, home, port):
        super().__init__(home)
        self.port = port

    def start(self):
        self.proc = subprocess.Popen(
            [str(COHORT_BIN), "server", "--port", str(self.port), "--data-dir", str(self.data_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("http://"), (line, self.proc.poll())
        self.url = line
        return self


def run_id_of(result_stdout):
    for line in result_stdout.splitlines():
        if line.startswith("run "):
            return line.split()[1]
    raise AssertionError(f"no run id in output: {result_stdout!r}")


def keys(api, run_id):
    status, me = api.get("/api/v1/viewer")
    status, body = api.get(f"/api/v1/runs/{me['entity']}/e2e/{run_id}/keys")
    if status != 200:
        return {}
    return {(k["key"], k["writer"]): k["count"] for k in body["keys"]}


def run_info(api, run_id):
    status, me = api.get("/api/v1/viewer")
    status, body = api.get(f"/api/v1/runs/{me['entity']}/e2e/{run_id}")
    return body if status == 200 else None


def user_points(api, run_id):
    return sum(c for (k, _), c in keys(api, run_id).items() if not k.startswith("system/"))


@pytest.fixture
def client(server):
    c = Client(server.home)
    yield c
    c.stop_agent()


def test_init_log_finish_delivers_ten_thousand_points(server, client):
    api = server.api()
    r = client.train("--steps", "1000", "--keys", "10")
    assert r.returncode == 0, r.stderr
    run_id = run_id_of(r.stdout)
    assert wait_for(lambda: user_points(api, run_id) == 10000, timeout=20), keys(api, run_id)
    counts = keys(api, run_id)
    assert all(c == 1000 for (k, _), c in counts.items() if not k.startswith("system/"))
    info = run_info(api, run_id)
    assert info["state"] == "finished"
    assert info["config"]["steps"] == 1000
    assert info["summary"]["final_loss"] > 0
    assert info["metadata"]["sdk"] == "cohort-cpp/" + project_version()
    status, me = api.get("/api/v1/viewer")
    status, lines = api.get(f"/api/v1/runs/{me['entity']}/e2e/{run_id}/console")
    assert any(l["text"].startswith("step 900 loss") for l in lines["lines"])


def test_failed_exit_code_marks_the_run_failed(server, client):
    api = server.api()
    r = client.train("--steps", "10", "--exit-code", "3")
    assert r.returncode == 3
    run_id = run_id_of(r.stdout)
    assert wait_for(lambda: (run_info(api, run_id) or {}).get("state") == "failed", timeout=20)


def test_init_with_server_down_returns_and_data_arrives_later(tmp_path):
    port = free_port()
    first = FixedPortServer(tmp_path, port).start()
    first.stop()  # the key and store exist; now the server is down
    c = Client(tmp_path, COHORT_BASE_URL=f"http://127.0.0.1:{port}")
    try:
        start = time.monotonic()
        r = c.train("--steps", "200", "--keys", "10", timeout=60)
        assert r.returncode == 0, r.stderr
        assert time.monotonic() - start < 15
        assert "buffering" in r.stdout
        run_id = run_id_of(r.stdout)
        again = FixedPortServer(tmp_path, port).start()
        try:
            api = again.api()
            assert wait_for(lambda: user_points(api, run_id) == 2000, timeout=60), keys(api, run_id)
            assert wait_for(lambda: run_info(api, run_id)["state"] == "finished", timeout=10)
        finally:
            again.stop()
    finally:
        c.stop_agent()


def test_agent_killed_mid_run_does_not_hang_and_loses_nothing(server, client):
    api = server.api()
    p = client.start("--steps", "300", "--keys", "10", "--sleep-ms", "10")
    assert wait_for(client.agent_pid, timeout=10)
    time.sleep(1.0)
    os.kill(client.agent_pid(), signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    run_id = run_id_of(out)
    assert wait_for(lambda: user_points(api, run_id) == 3000, timeout=30), keys(api, run_id)
    counts = keys(api, run_id)
    assert all(c == 300 for (k, _), c in counts.items() if not k.startswith("system/"))
    assert wait_for(lambda: run_info(api, run_id)["state"] == "finished", timeout=10)


def test_offline_run_is_uploaded_by_sync_once(server, client):
    api = server.api()
    r = client.train("--steps", "100", "--keys", "10", COHORT_MODE="offline")
    assert r.returncode == 0, r.stderr
    run_id = run_id_of(r.stdout)
    time.sleep(0.5)
    assert run_info(api, run_id) is None  # nothing was sent
    data_dir = client.home / ".local" / "share" / "cohort" / "agent"
    client.stop_agent()  # releases the WAL directories
    wait_for(lambda: not client.agent_pid(), timeout=10)
    for _ in range(2):
        s = subprocess.run([str(SYNC_BIN), "sync", str(data_dir)], env=client.env,
                           capture_output=True, text=True, timeout=60)
        assert s.returncode == 0, s.stderr
    assert wait_for(lambda: user_points(api, run_id) == 1000, timeout=10), keys(api, run_id)
    counts = keys(api, run_id)
    assert all(c == 100 for (k, _), c in counts.items() if not k.startswith("system/"))
    assert run_info(api, run_id)["state"] == "finished"


def test_sync_says_what_the_server_refused_for_good_and_exits_1(tmp_path):
    """Batches the server refuses for good (here: more keys than its --max-keys-per-batch) are
    dropped from the WAL: `cohort sync` must not report the stream uploaded and exit 0."""
    strict = ServerProcess(tmp_path / "strict", extra_args=["--max-keys-per-batch", "5"]).start()
    try:
        client = Client(strict.home)
        r = client.train("--steps", "20", "--keys", "10", COHORT_MODE="offline")
        assert r.returncode == 0, r.stderr
        run_id = run_id_of(r.stdout)
        client.stop_agent()
        wait_for(lambda: not client.agent_pid(), timeout=10)
        data_dir = client.home / ".local" / "share" / "cohort" / "agent"
        s = subprocess.run([str(SYNC_BIN), "sync", str(data_dir)], env=client.env,
                           capture_output=True, text=True, timeout=60)
        assert s.returncode == 1, (s.stdout, s.stderr)
        assert "refused by the server for good and not stored" in s.stderr, s.stderr
        assert "--max-keys-per-batch" in s.stderr, s.stderr
        assert run_info(strict.api(), run_id)["state"] == "finished"  # the rest went
        # The directory is kept, and a second sync says it again (it said "uploaded", exit 0).
        again = subprocess.run([str(SYNC_BIN), "sync", str(data_dir)], env=client.env,
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 1, (again.stdout, again.stderr)
        assert "refused by the server for good and not stored" in again.stderr, again.stderr
        assert "--max-keys-per-batch" in again.stderr, again.stderr
    finally:
        strict.stop()


def test_torchrun_ranks_share_one_run_without_coordination(server, client):
    api = server.api()
    env = dict(TORCHELASTIC_RUN_ID="job-e2e-1", WORLD_SIZE="2")
    procs = [client.start("--steps", "50", "--keys", "2", "--shared", RANK=str(r), **env)
             for r in (0, 1)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    run_ids = {run_id_of(o[0]) for o in outs}
    assert len(run_ids) == 1
    run_id = run_ids.pop()
    assert wait_for(lambda: user_points(api, run_id) == 200, timeout=20), keys(api, run_id)
    writers = {w["label"]: w for w in run_info(api, run_id)["writers"]}
    assert set(writers) == {"rank_0", "rank_1"}
    assert writers["rank_0"]["primary"] and not writers["rank_1"]["primary"]


def test_summary_keeps_the_last_logged_values(server, client):
    api = server.api()
    r = client.train("--steps", "200", "--keys", "3")
    assert r.returncode == 0, r.stderr
    run_id = run_id_of(r.stdout)
    assert wait_for(lambda: "metric_2" in (run_info(api, run_id) or {}).get("summary", {}),
                    timeout=20), run_info(api, run_id)
    summary = run_info(api, run_id)["summary"]
    last = 199
    for k, key in enumerate(("loss", "metric_1", "metric_2")):
        want = math.exp(-last / 100.0) * (k + 1) + 0.001 * (last % 7)
        assert summary[key] == pytest.approx(want, rel=1e-12), (key, summary)
    assert summary["final_loss"] == pytest.approx(summary["loss"], rel=1e-5)  # set by hand


def test_rename_and_tags_after_init_reach_the_run(server, client):
    api = server.api()
    r = client.train("--steps", "20", "--keys", "2", "--rename", "renamed-run")
    assert r.returncode == 0, r.stderr
    run_id = run_id_of(r.stdout)
    assert wait_for(lambda: (run_info(api, run_id) or {}).get("name") == "renamed-run",
                    timeout=20), run_info(api, run_id)
    assert run_info(api, run_id)["tags"] == ["renamed-run"]


def test_sigterm_marks_the_run_killed_and_the_process_dies_of_it(server, client):
    api = server.api()
    p = client.start("--steps", "100000", "--keys", "2", "--sleep-ms", "5")
    first = p.stdout.readline()
    run_id = run_id_of(first)
    assert wait_for(lambda: user_points(api, run_id) > 0, timeout=20)
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGTERM
    assert wait_for(lambda: run_info(api, run_id)["state"] == "killed", timeout=20), \
        run_info(api, run_id)
    writer = run_info(api, run_id)["writers"][0]
    assert writer["state"] == "killed" and writer["exit_code"] == 143
    points = user_points(api, run_id)
    counts = keys(api, run_id)
    assert counts[("loss", writer["label"])] * 2 == points  # both keys of every step arrived


def test_plain_run_under_torchrun_is_primary_on_every_rank(server, client):
    api = server.api()
    r = client.train("--steps", "5", "--keys", "1", RANK="1", WORLD_SIZE="2")
    assert r.returncode == 0, r.stderr
    run_id = run_id_of(r.stdout)
    assert wait_for(lambda: (run_info(api, run_id) or {}).get("state") == "finished", timeout=20)
    (writer,) = run_info(api, run_id)["writers"]
    assert writer["label"] == "rank_1" and writer["primary"]


@pytest.mark.parametrize("env", [{"COHORT_ENTITY": "someone-else"}])
def test_sync_of_a_writer_the_server_refuses_exits_1_and_keeps_it(server, client, env):
    """A writer whose run the server refuses (here: another entity than the key's) was dropped
    by `cohort sync` with exit status 0 ("0 uploaded"): nothing may report success for data it
    did not keep. It says which writer and why, exits 1, and keeps the directory."""
    r = client.train("--steps", "5", "--keys", "2", COHORT_MODE="offline", **env)
    assert r.returncode == 0, r.stderr
    client.stop_agent()
    wait_for(lambda: not client.agent_pid(), timeout=10)
    data_dir = client.home / ".local" / "share" / "cohort" / "agent"
    metas = sorted(data_dir.rglob("meta.json"))
    assert len(metas) == 1, metas
    writer_dir = metas[0].parent
    for _ in range(2):  # and again: the directory is still there, the refusal said again
        s = subprocess.run([str(SYNC_BIN), "sync", str(data_dir)], env=client.env,
                           capture_output=True, text=True, timeout=60)
        assert s.returncode == 1, (s.stdout, s.stderr)
        assert f"cohort sync: {writer_dir}" in s.stderr, s.stderr
        assert "someone-else" in s.stderr, s.stderr
        assert writer_dir.is_dir()
