"""Helpers of the fault tests: a `cohort server` on a fixed port that can be killed with SIGKILL
and restarted on the same data directory, training processes (tests/fault/fault_writer.cc, with
the real node agent or the in-process sender) whose logged values can be recomputed, and a
check that every point a writer logged is stored exactly once with its value.

COHORT_SLOW_TESTS=1 selects the long variants (more cycles, longer outages).
"""
import os
import pathlib
import random
import signal
import socket
import subprocess
import time

from conftest import BUILD, COHORT_BIN, ServerProcess, wait_for

SLOW = os.environ.get("COHORT_SLOW_TESTS") == "1"
WRITER_BIN = BUILD / "tests" / "fault" / "cohort_fault_writer"
CLOCK_SHIFT_LIB = BUILD / "tests" / "fault" / "clock_shift.so"
PROJECT = "fault"

# Variables of the runner's environment that would change what the writers do.
_SCRUB = ("COHORT_MODE", "COHORT_RUN_ID", "COHORT_PROJECT", "COHORT_ENTITY", "COHORT_BASE_URL",
          "COHORT_API_KEY", "COHORT_DIR", "COHORT_AGENT", "COHORT_AGENT_SOCKET", "RANK",
          "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "COHORT_CLOCK_SHIFT")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def value(writer, step, key):
    """What fault_writer logs for key k<key> at `step` (exact in a double)."""
    return writer * 1e6 + step * 16.0 + key


class FaultServer(ServerProcess):
    """`cohort server` on a fixed port, restartable after a SIGKILL on the same data dir."""

    def __init__(self, home, extra_args=(), port=None):
        super().__init__(home, extra_args)
        self.port = port or free_port()
        self.kills = 0

    def start(self):
        assert COHORT_BIN.exists(), f"build the project first: {COHORT_BIN} is missing"
        for attempt in range(50):
            self.proc = subprocess.Popen(
                [str(COHORT_BIN), "server", "--port", str(self.port), "--data-dir",
                 str(self.data_dir)] + self.extra_args,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env, text=True)
            line = self.proc.stdout.readline().strip()
            if line.startswith("http://"):
                self.url = line
                self.proc.stdout.readline()  # the UI line
                return self
            err = self.proc.stderr.read() if self.proc.wait(timeout=10) is not None else ""
            if "in use" not in err and "bind" not in err.lower():
                raise RuntimeError(f"server did not start: {line!r} {err}")
            time.sleep(0.1)  # the port is still held (a socket of the killed server lingers)
        raise RuntimeError(f"port {self.port} stayed busy")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.kills += 1

    def running(self):
        return self.proc is not None and self.proc.poll() is None


class Writers:
    """Starts fault_writer processes in the server's HOME (so they share one node agent)."""

    def __init__(self, server, **env):
        self.server = server
        cfg = server.config
        e = {k: v for k, v in server.env.items() if k not in _SCRUB}
        e.update(COHORT_BIN=str(COHORT_BIN), COHORT_PROJECT=PROJECT,
                 COHORT_BASE_URL=f"http://127.0.0.1:{server.port}",
                 COHORT_API_KEY=cfg["api_key"], COHORT_AGENT_IDLE_S="30",
                 COHORT_BACKOFF_MAX_S="1")
        e.update(env)
        self.env = e
        self.procs = []  # (Popen, spec)
        assert WRITER_BIN.exists(), f"build the project first: {WRITER_BIN} is missing"

    def start(self, run_id, writer, steps, keys=4, sleep_ms=5, label=None, shared=False,
              primary=None, inprocess=False, extra=(), **env):
        argv = [str(WRITER_BIN), "--writer", str(writer), "--steps", str(steps), "--keys",
                str(keys), "--sleep-ms", str(sleep_ms), *extra]
        if label:
            argv += ["--label", label]
        if shared:
            argv.append("--shared")
        if primary is not None:
            argv += ["--primary", "1" if primary else "0"]
        e = dict(self.env, COHORT_RUN_ID=run_id, **env)
        if inprocess:
            e["COHORT_AGENT"] = "inprocess"
        p = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        spec = dict(run=run_id, writer=writer, steps=steps, keys=keys, label=label)
        self.procs.append((p, spec))
        return p

    def wait_all(self, timeout):
        """Waits for every writer; returns [(spec, returncode, stdout, stderr)]."""
        deadline = time.monotonic() + timeout
        out = []
        for p, spec in self.procs:
            try:
                so, se = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate()
                raise AssertionError(f"writer {spec} hung:\n{so[-2000:]}\n{se[-2000:]}")
            out.append((spec, p.returncode, so, se))
        return out

    def agent_pids(self):
        marker = ("HOME=" + str(self.server.home)).encode()
        pids = []
        for d in pathlib.Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes().split(b"\0")
                env = (d / "environ").read_bytes().split(b"\0")
                state = (d / "stat").read_text().split(") ", 1)[1][0]
            except (OSError, IndexError):
                continue
            if len(cmd) > 1 and cmd[1] == b"agent" and marker in env and state != "Z":
                pids.append(int(d.name))
        return pids

    def serving_agent(self):
        """The pid of the agent that holds the agent lock (and so serves the socket), or 0."""
        lock = self.server.home / "run" / "cohort" / "agent.lock"
        try:
            pid = int(lock.read_text().strip() or 0)
            state = pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
            return pid if state != "Z" and pid in self.agent_pids() else 0
        except (OSError, ValueError, IndexError):
            return 0

    def stop(self):
        for p, _ in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for pid in self.agent_pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        wait_for(lambda: not self.agent_pids(), timeout=10)
        for pid in self.agent_pids():
            os.kill(pid, signal.SIGKILL)


def entity(api):
    status, me = api.get("/api/v1/viewer")
    assert status == 200, me
    return me["entity"]


def run_path(api, run_id):
    return f"/api/v1/runs/{entity(api)}/{PROJECT}/{run_id}"


def key_counts(api, run_id):
    """{(key, writer): count}, {} while the run is unknown."""
    status, body = api.get(run_path(api, run_id) + "/keys")
    if status != 200:
        return {}
    return {(k["key"], k["writer"]): k["count"] for k in body["keys"]
            if not k["key"].startswith("system/")}


def expected_counts(specs_by_label):
    return {(f"k{k}", label): spec["steps"] for label, spec in specs_by_label.items()
            for k in range(spec["keys"])}


def assert_exactly_once(api, run_id, specs_by_label, timeout=60, others=None):
    """Waits until the run holds as many points as its writers logged, then checks every point:
    each (key, writer) series has each step once, with the value fault_writer logged. `others`:
    {(key, writer): count} of series the test wrote itself. Returns the number of points
    checked."""
    want = {**expected_counts(specs_by_label), **(others or {})}
    got = wait_for(lambda: (c := key_counts(api, run_id)) == want and c, timeout=timeout,
                   interval=0.2)
    assert got == want, f"run {run_id}: counts {key_counts(api, run_id)} != {want}"
    checked = 0
    for label, spec in specs_by_label.items():
        keys = ",".join(f"k{k}" for k in range(spec["keys"]))
        status, body = api.get(run_path(api, run_id) + f"/history?keys={keys}&writers={label}")
        assert status == 200, body
        series = {s["key"]: s["points"] for s in body["series"]}
        for k in range(spec["keys"]):
            points = series[f"k{k}"]
            steps = [p[0] for p in points]
            assert steps == list(range(spec["steps"])), (run_id, label, k, steps[:20])
            bad = [(p[0], p[2]) for p in points if p[2] != value(spec["writer"], p[0], k)]
            assert not bad, (run_id, label, k, bad[:10])
            checked += len(points)
    return checked


def writer_states(api, run_id):
    status, body = api.get(run_path(api, run_id) + "/writers")
    return {w["label"]: w["state"] for w in body["writers"]} if status == 200 else {}


def run_state(api, run_id):
    status, body = api.get(run_path(api, run_id))
    return body["state"] if status == 200 else None


def random_run_id(prefix):
    return prefix + "".join(random.choice("0123456789abcdefghijklmnopqrstuvwxyz")
                            for _ in range(6))


def http_status_count(api, route_suffix, status):
    """How many requests of a route (pattern ending in `route_suffix`) got `status`, from the
    server's /metrics."""
    code, text = api.get("/metrics")
    assert code == 200, text
    total = 0
    for line in text.splitlines():
        if line.startswith("cohort_http_requests_total{") and f'status="{status}"' in line:
            route = line.split('route="', 1)[1].split('"', 1)[0]
            if route.endswith(route_suffix):
                total += int(float(line.rsplit(" ", 1)[1]))
    return total
