"""What the Python benchmarks share: a fresh `cohort server` on loopback (port 0, its data and a
private HOME in a temporary directory), the environment an SDK process needs to log to it, its
reads with the account's API key, and the median timing of a call (also imported by the logging
scripts the benchmarks run: bench/ is on their PYTHONPATH).

    with BenchServer(tmp) as srv:
        proc = srv.run_script(SCRIPT)          # a training process against the server
        body = srv.get("/api/v1/viewer")       # JSON, with the API key the SDK logged in with

The read benchmarks (read_bench.py, system_read_bench.py) talk HTTP themselves, over one
keep-alive connection: `Server` (optionally on a PostgreSQL store), `raw_read` (one GET timed,
with the server's CPU time per read from /proc), `frames_by_format` (an SDK read into a
DataFrame with the JSON answer and with the columnar one, checked equal), `cpu_ms`, `timed`.
The build: $BUILD_DIR, else $COHORT_BUILD_DIR, else build/.
"""
import http.client
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("BUILD_DIR") or os.environ.get("COHORT_BUILD_DIR") or
                     ROOT / "build")
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


def write_random_file(path, size_mb):
    """`size_mb` MiB of random bytes (incompressible, as model weights) at `path`."""
    with open(path, "wb") as f:
        for _ in range(size_mb):
            f.write(os.urandom(1 << 20))


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
        # python/ and bench/ first; what the caller's PYTHONPATH holds (packages installed
        # beside the interpreter's, e.g. on a device machine) after them.
        path = [str(ROOT / "python"), str(ROOT / "bench"),
                *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        self.env.update({"PYTHONPATH": os.pathsep.join(path),
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

    def seed_runs(self, project, n, config, summary, threads=8):
        """Creates runs 0..n-1 of `project` over HTTP (`threads` keep-alive connections): run i
        named r<i> with `config(i)`, then its summary set to `summary(i)` (skipped when empty)."""
        from concurrent.futures import ThreadPoolExecutor
        base = f"/api/v1/runs/{self.get('/api/v1/viewer')['entity']}/{project}"
        host = urllib.parse.urlparse(self.url).netloc
        headers = {"Authorization": "Bearer " + self.api_key(),
                   "Content-Type": "application/json"}

        def seed(ids):
            conn = http.client.HTTPConnection(host)
            for i in ids:
                conn.request("POST", base, json.dumps({"name": f"r{i}", "config": config(i)}),
                             headers)
                resp = conn.getresponse()
                run = json.loads(resp.read())
                assert resp.status == 201, run
                values = summary(i)
                if values:
                    conn.request("PATCH", f"{base}/{run['id']}",
                                 json.dumps({"summary": values}), headers)
                    resp = conn.getresponse()
                    body = resp.read()
                    assert resp.status == 200, body
            conn.close()

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(seed, [range(k, n, threads) for k in range(threads)]))


def timed(fn, repeat, warm=True):
    """(median ms of `repeat` calls of fn after one warm call (none: warm=False), fn's last
    result)."""
    out = fn() if warm else None
    ms = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms), out


def cpu_ms(pids):
    """utime + stime of the processes in ms (ones that are gone count 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def cluster_pids(pg):
    """The postmaster of `pg` (tests/postgres/pg_cluster.py) and its children (the backends
    serving the server); [] for None."""
    if pg is None:
        return []
    with open(os.path.join(pg.dir, "data", "postmaster.pid")) as f:
        master = int(f.readline())
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout
    return [master] + [int(p) for p in out.split()]


class Server:
    """A `cohort server` on a fresh store (SQLite in workdir/data, or `store_url`); one
    keep-alive connection to it. `url`, `key` (the account's API key), `proc`."""

    def __init__(self, workdir, store_url=None):
        home = pathlib.Path(workdir) / "home"
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        store = ["--store", store_url] if store_url else []
        self.proc = subprocess.Popen(
            [str(COHORT), "server", "--port", "0", "--data-dir",
             str(pathlib.Path(workdir) / "data"), *store],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        url = self.proc.stdout.readline().strip()
        if not url.startswith("http"):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("cohort server did not start")
        parsed = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
        key = json.loads((home / ".config" / "cohort" / "config.json").read_text())["api_key"]
        self.url, self.key = url, key
        self.headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}

    def call(self, method, path, body=None, accept=None):
        """Returns (status, raw answer bytes)."""
        headers = dict(self.headers, Accept=accept) if accept else self.headers
        self.conn.request(method, path, json.dumps(body) if body is not None else None,
                          headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()

    def json(self, method, path, body=None):
        status, data = self.call(method, path, body)
        if status not in (200, 201):
            raise RuntimeError(f"{method} {path}: {status} {data[:200]!r}")
        return json.loads(data)

    def stop(self):
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def raw_read(server, path, repeat, accept=None, check=None, pg=None):
    """`repeat` timed GETs of `path` (after one warm GET) with `accept`; each answer is passed to
    check(body) (it raises on a wrong answer; its time counts: the client's parse or decode).
    Returns {"ms": median wall ms, "server_cpu_ms": the server's CPU time per timed read
    (/proc), "db_cpu_ms" (with `pg`: its cluster's processes), "bytes": the answer's size}."""
    def read():
        status, body = server.call("GET", path, accept=accept)
        if status != 200:
            raise RuntimeError(f"GET {path} ({accept or 'JSON'}): {status} {body[:200]!r}")
        if check is not None:
            check(body)
        return body
    read()  # warm: the store's pages in memory, the connection's statements
    db = cluster_pids(pg)
    cpu0, db0 = cpu_ms([server.proc.pid]), cpu_ms(db)
    ms = []
    for _ in range(repeat):
        t = time.perf_counter()
        body = read()
        ms.append((time.perf_counter() - t) * 1e3)
    out = {"ms": statistics.median(ms),
           "server_cpu_ms": (cpu_ms([server.proc.pid]) - cpu0) / repeat, "bytes": len(body)}
    if pg is not None:
        out["db_cpu_ms"] = (cpu_ms(db) - db0) / repeat
    return out


def frames_by_format(read, repeat):
    """read() (a cohort SDK read into a DataFrame) timed with the JSON answers
    (COHORT_API_COLUMNS=0) and with the columnar ones (=1): ({"json": ms, "columns": ms}, the
    JSON frame). Raises when the two frames differ."""
    ms, frames = {}, {}
    try:
        for mode, env in (("json", "0"), ("columns", "1")):
            os.environ["COHORT_API_COLUMNS"] = env
            ms[mode], frames[mode] = timed(read, repeat)
    finally:
        os.environ.pop("COHORT_API_COLUMNS", None)
    if not frames["json"].equals(frames["columns"]):
        raise RuntimeError("the JSON and columnar frames differ")
    return ms, frames["json"]
