"""What the Python benchmarks that log through the SDK share: a fresh `cohort server` on
loopback (port 0, its data and a private HOME in a temporary directory), the environment an SDK
process needs to log to it, its reads with the account's API key, and the median timing of a
call (also imported by the logging scripts the benchmarks run: bench/ is on their PYTHONPATH).

    with BenchServer(tmp) as srv:
        proc = srv.run_script(SCRIPT)          # a training process against the server
        body = srv.get("/api/v1/viewer")       # JSON, with the API key the SDK logged in with
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("BUILD_DIR", ROOT / "build"))
COHORT = BUILD / "src" / "cli" / "cohort"


def p50(fn, n, gap=0.0):
    """The median time of fn(i) over i in range(n), in microseconds (sleeping `gap` seconds after
    each call: a training step between the calls)."""
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
        if gap:
            time.sleep(gap)
    return statistics.median(out) * 1e6


class BenchServer:
    """A fresh server in `tmp` (data in tmp/data, HOME tmp/home) from `with` to its end.
    `env`: what an SDK process needs to log to it (HOME, the build's binaries and extension,
    bench/ and python/ on PYTHONPATH) plus `extra_env`; `server_args`: more flags of the server."""

    def __init__(self, tmp, extra_env=None, server_args=()):
        self.tmp = pathlib.Path(tmp)
        self.home = self.tmp / "home"
        self.env = dict(os.environ, HOME=str(self.home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
                        XDG_RUNTIME_DIR=str(self.home / "run"),
                        XDG_CACHE_HOME=str(self.home / "cache"))
        self.extra_env = dict(extra_env or {})
        self.server_args = list(server_args)
        self.proc = None
        self.url = None

    def __enter__(self):
        (self.home / "run").mkdir(parents=True, mode=0o700)
        self.proc = subprocess.Popen([str(COHORT), "server", "--port", "0", "--data-dir",
                                      str(self.tmp / "data"), *self.server_args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=self.env, text=True)
        self.url = self.proc.stdout.readline().strip()
        self.env.update({"PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT / "bench")]),
                         "COHORT_BUILD_DIR": str(BUILD), "COHORT_BIN": str(COHORT),
                         "COHORT_AGENT_IDLE_S": "5"}, **self.extra_env)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def script(self, text, name="log.py"):
        """Writes a logging script into the temporary directory; its path."""
        path = self.tmp / name
        path.write_text(text)
        return path

    def run_script(self, text, *args, python=sys.executable, timeout=1800):
        """Runs `text` as a Python script against the server; raises on a non-zero exit."""
        proc = subprocess.run([python, str(self.script(text)), *map(str, args)], env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
        return proc

    def start_script(self, text, *args, python=sys.executable):
        """Starts `text` as a Python script against the server (stdout and stderr piped)."""
        return subprocess.Popen([python, str(self.script(text)), *map(str, args)], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def api_key(self):
        """The key the SDK logged in with (written on its first run)."""
        return json.loads((self.home / ".config" / "cohort" / "config.json").read_text())["api_key"]

    def read(self, path):
        """GET url+path with the API key: the body's bytes."""
        return urllib.request.urlopen(urllib.request.Request(
            self.url + path, headers={"Authorization": "Bearer " + self.api_key()})).read()

    def get(self, path):
        """GET url+path with the API key, as JSON."""
        return json.loads(self.read(path))
