"""Helpers of the distributed-scenario tests: training scripts run as real processes (real
torch.distributed ranks, real node agent) against a real `cohort server` on a free port with a
private HOME (tests/conftest.py's ServerProcess), and the server's HTTP API read back the way a
user's UI would read it.
"""
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
import sdk_helpers  # noqa: E402  (fails with a clear message when the extension is missing)
from conftest import BUILD, wait_for  # noqa: E402,F401

import pytest  # noqa: E402

ROOT = sdk_helpers.ROOT
EXAMPLES = ROOT / "examples"
PROJECT = "scenarios"

# Variables of the test runner's own environment that would change what the scripts do.
_SCRUB = ("COHORT_MODE", "COHORT_RUN_ID", "COHORT_PROJECT", "COHORT_ENTITY", "COHORT_BASE_URL",
          "COHORT_API_KEY", "COHORT_DIR", "COHORT_AGENT", "COHORT_AGENT_SOCKET", "RANK",
          "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
          "MASTER_PORT", "TORCHELASTIC_RUN_ID")


def agent_binary():
    """The binary the client library spawns as `<bin> agent`: the real `cohort` CLI."""
    cli = BUILD / "src" / "cli" / "cohort"
    assert cli.exists(), f"build the project first: {cli} is missing"
    out = subprocess.run([str(cli), "--help"], capture_output=True, text=True, timeout=30)
    assert " agent" in out.stdout, f"{cli} has no `agent` subcommand"
    return cli


class Client:
    """Starts Python training processes in the server's private HOME."""

    def __init__(self, server, tmp_path):
        self.server = server
        self.tmp = pathlib.Path(tmp_path)
        env = {k: v for k, v in server.env.items() if k not in _SCRUB}
        env.update({
            "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(EXAMPLES)]),
            "COHORT_BUILD_DIR": str(BUILD),
            "COHORT_BIN": str(agent_binary()),
            "COHORT_AGENT_IDLE_S": "20",  # teardown stops them (stop_agents)
            "PYTHONUNBUFFERED": "1",
        })
        self.env = env
        self.api = server.api()
        status, me = self.api.get("/api/v1/viewer")
        assert status == 200, me
        self.entity = me["entity"]

    def _env(self, extra):
        env = dict(self.env)
        env.update(extra or {})
        return env

    def popen(self, argv, env=None, **kw):
        return subprocess.Popen([sys.executable, *map(str, argv)], env=self._env(env),
                                cwd=str(self.tmp), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)

    def run(self, argv, env=None, timeout=120):
        """Runs `python argv...`; returns the CompletedProcess (never raises on exit status)."""
        return subprocess.run([sys.executable, *map(str, argv)], env=self._env(env),
                              cwd=str(self.tmp), capture_output=True, text=True,
                              timeout=timeout)

    def python(self, code, env=None, timeout=120):
        """Runs a Python snippet (written to a file, so that multiprocessing can re-import)."""
        path = self.tmp / f"snippet_{time.monotonic_ns()}.py"
        path.write_text(code)
        return self.run([path], env=env, timeout=timeout)

    @staticmethod
    def _launch_argv(example, nproc, args, keep_going):
        argv = [EXAMPLES / "launch.py", "--nproc", nproc]
        if keep_going:
            argv.append("--keep-going")
        return argv + [EXAMPLES / example, "--project", PROJECT, *args]

    def launch(self, example, nproc, *args, env=None, timeout=180, keep_going=False):
        """Runs examples/<example> on `nproc` ranks through examples/launch.py."""
        return self.run(self._launch_argv(example, nproc, args, keep_going), env=env,
                        timeout=timeout)

    def launch_popen(self, example, nproc, *args, env=None, keep_going=False):
        """Starts examples/<example> on `nproc` ranks; returns the launcher's Popen."""
        return self.popen(self._launch_argv(example, nproc, args, keep_going), env=env)

    # -- API reads ----------------------------------------------------------------------------
    def get(self, path, missing=False, **query):
        """GET path?query; asserts 200 (with `missing`, a 404 returns None)."""
        q = {k: v for k, v in query.items() if v is not None}
        url = path + ("?" + urllib.parse.urlencode(q) if q else "")
        status, body = self.api.get(url)
        if missing and status == 404:
            return None
        assert status == 200, (url, status, body)
        return body

    def runs(self, project=PROJECT, **query):
        return self.get(f"/api/v1/runs/{self.entity}/{project}", limit=200, **query)["runs"]

    def run_view(self, run_id, project=PROJECT):
        return RunView(self, f"/api/v1/runs/{self.entity}/{project}/{run_id}")

    def only_run(self, project=PROJECT):
        """The view of the project's one run, once it is listed (asserts there is one)."""
        runs = wait_until(lambda: self.runs(project=project), what="a run")
        assert len(runs) == 1, [r["id"] for r in runs]
        return self.run_view(runs[0]["id"], project=project)

    # -- cleanup ------------------------------------------------------------------------------
    def agent_pids(self):
        """Agents started for this test (their environment names this test's HOME)."""
        marker = ("HOME=" + str(self.server.home)).encode()
        pids = []
        for d in pathlib.Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                env = (d / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if len(cmd) > 1 and cmd[1] == b"agent" and marker in env:
                pids.append(int(d.name))
        return pids

    def stop_agents(self):
        pids = self.agent_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for pid in pids:
            while time.monotonic() < deadline and pathlib.Path(f"/proc/{pid}").exists():
                if _is_zombie(pid):
                    break
                time.sleep(0.05)
            if pathlib.Path(f"/proc/{pid}").exists() and not _is_zombie(pid):
                os.kill(pid, signal.SIGKILL)


def _is_zombie(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] == "Z"
    except (OSError, IndexError):
        return True


class RunView:
    """Reads one run through the API."""

    def __init__(self, client, path):
        self.client = client
        self.path = path

    ENDED = ("finished", "failed", "crashed", "killed", "preempted")

    def get(self):
        """The run object ({"state": "absent"} while the server does not know it yet)."""
        return self.client.get(self.path, missing=True) or {"state": "absent"}

    def wait_state(self, states=ENDED, timeout=30.0):
        """The run object once its state is one of `states` (any end by default)."""
        return wait_until(lambda: (r := self.get())["state"] in states and r, timeout,
                          what=f"run state in {states}")

    def writers(self):
        return {w["label"]: w for w in self.client.get(self.path + "/writers")["writers"]}

    def history(self, keys=None, writers=None):
        """{(key, writer): [(step, value), ...]}"""
        body = self.client.get(self.path + "/history", missing=True,
                               keys=",".join(keys) if keys else None,
                               writers=",".join(writers) if writers else None)
        if body is None:  # the run has not reached the server yet
            return {}
        return {(s["key"], s["writer"]): [(p[0], p[2]) for p in s["points"]]
                for s in body["series"]}

    def system(self, labels=None):
        """{(key, label): number of points}"""
        body = self.client.get(self.path + "/system",
                               labels=",".join(labels) if labels else None)
        out = {}
        for s in body["series"]:
            label = s.get("label", s.get("writer"))
            out[(s["key"], label)] = len(s.get("points", s.get("buckets", [])))
        return out

    def console(self, labels=None, q=None):
        body = self.client.get(self.path + "/console",
                               labels=",".join(labels) if labels else None, q=q, limit=5000)
        return body["lines"]


@pytest.fixture
def client(server, tmp_path):
    c = Client(server, tmp_path)
    yield c
    c.stop_agents()


def assert_ok(proc):
    assert proc.returncode == 0, (
        f"exit status {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
        f"--- stderr\n{proc.stderr[-4000:]}")
    return proc


def wait_until(predicate, timeout=30.0, what="condition"):
    """wait_for that fails the test with `what` when the predicate never holds."""
    value = wait_for(predicate, timeout=timeout, interval=0.1)
    if not value:
        detail = what() if callable(what) else what
        raise AssertionError(f"timed out after {timeout}s waiting for {detail}")
    return value


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server_on(server, port):
    """(Re)starts `server` (a stopped ServerProcess) on a fixed port with the same HOME and data
    directory, so that clients configured for it find it again."""
    import subprocess as sp
    from conftest import COHORT_BIN
    server.proc = sp.Popen([str(COHORT_BIN), "server", "--port", str(port), "--data-dir",
                            str(server.data_dir)] + server.extra_args,
                           stdout=sp.PIPE, stderr=sp.PIPE, env=server.env, text=True)
    line = server.proc.stdout.readline().strip()
    assert line.startswith("http://"), (line, server.proc.poll())
    server.url = line
    server.proc.stdout.readline()
    return server
