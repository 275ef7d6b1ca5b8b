"""How long a writer's finish takes on PostgreSQL when the writer logged many keys: the finish
seals every series' tail (src/store/sql/sql_tail_seal.h) in its transaction, so its cost grows
with the keys, and on PostgreSQL every statement is a round trip.

usage: .venv/bin/python bench/pg_finish.py --bin build/src/cli/cohort [--bin OTHER/cohort]
           [--keys 2000] [--batches 3] [--rows 10] [--reps 5] [--sqlite]

One throwaway durable cluster (tests/postgres/pg_cluster.py), a database and a `cohort server`
per binary, all running at once; each repetition logs, per binary in turn, a run whose one writer
posts `batches` batches of `rows` rows x `keys` keys through the JSON API, then times the
writer's finish request. Prints the median and the spread per binary.
"""
import argparse
import contextlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "postgres"))
from pg_cluster import PgCluster  # noqa: E402


class Server:
    def __init__(self, binary, store_url, home):
        home.mkdir(parents=True)
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="")
        argv = [binary, "server", "--port", "0", "--data-dir", str(home / "data")]
        if store_url:
            argv += ["--store", store_url]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True)
        try:
            self.url = self.proc.stdout.readline().strip()
            self.key = json.loads((home / ".config/cohort/config.json").read_text())["api_key"]
            self.entity = self.request("GET", "/api/v1/viewer")["entity"]
        except BaseException:
            self.stop()
            raise

    def request(self, method, path, body=None):
        req = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read() or b"{}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def finish_ms(server, run, keys, batches, rows):
    base = f"/api/v1/runs/{server.entity}/sealbench"
    server.request("POST", base, {"id": run, "name": run})
    server.request("POST", f"{base}/{run}/writers", {"label": "w"})
    step = 0
    for seq in range(1, batches + 1):
        history = []
        for _ in range(rows):
            step += 1
            history.append({"step": step, "time": 1_700_000_000_000 + step * 100,
                            "values": {f"layer{k}/grad_norm": 0.001 * ((k * 7919 + step) % 1000)
                                       for k in range(keys)}})
        server.request("POST", f"{base}/{run}/writers/w/batches", {"seq": seq, "history": history})
    t0 = time.perf_counter()
    server.request("POST", f"{base}/{run}/writers/w/finish", {"exit_code": 0})
    return (time.perf_counter() - t0) * 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", action="append", required=True)
    p.add_argument("--keys", type=int, default=2000)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--rows", type=int, default=10)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--sqlite", action="store_true",
                   help="the servers' own SQLite stores instead (the same seal, in process)")
    a = p.parse_args()
    with contextlib.ExitStack() as stack:
        pg = None if a.sqlite else stack.enter_context(PgCluster(durable=True))
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="pg-finish-"))
        servers = []
        stack.callback(lambda: [server.stop() for server in servers])
        for i, binary in enumerate(a.bin):
            url = ""
            if pg:
                pg.create_database(f"cohort{i}")
                url = pg.url(f"cohort{i}")
            servers.append(Server(binary, url, pathlib.Path(tmp) / str(i)))
        times = [[] for _ in servers]
        for rep in range(a.reps):
            for i, server in enumerate(servers):
                times[i].append(finish_ms(server, f"r{rep}", a.keys, a.batches, a.rows))
    engine = "SQLite" if a.sqlite else "PostgreSQL"
    print(f"pg_finish: {engine}: {a.keys} keys, {a.batches} batches of {a.rows} rows, "
          f"{a.reps} reps; load average {os.getloadavg()[0]:.1f}")
    for binary, ts in zip(a.bin, times):
        print(f"  {binary}: finish median {statistics.median(ts):.0f} ms "
              f"(min {min(ts):.0f}, max {max(ts):.0f})")


if __name__ == "__main__":
    main()
