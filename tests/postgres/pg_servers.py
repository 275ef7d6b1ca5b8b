"""Helpers of the PostgreSQL suites (the module's cluster is conftest.py's `cluster` fixture):
a database of its own per test, `cohort server` processes on it, and the calls the tests make
of them."""
import contextlib
import pathlib
import subprocess
import urllib.parse

from conftest import COHORT_BIN, ServerProcess
from conftest import byte_pattern as data_of  # noqa: F401  (the tests' name for it)


def fresh_db(cluster, tmp_path, tag):
    """A new database of `cluster` for the test of `tmp_path`: `tag`, "_" and the end of the
    directory's name."""
    db = tag + "_" + tmp_path.name.replace("-", "_").lower()[-40:]
    cluster.create_database(db)
    return db


@contextlib.contextmanager
def running(server):
    """`server` (a ServerProcess) started; stopped on leaving."""
    server.start()
    try:
        yield server
    finally:
        server.stop()


def own_blob_dir(home, store, args=(), env=None):
    """`--blob-dir <home>/data/blobs` (the server's own directory, named: a server on a
    PostgreSQL store refuses to start without a blob store) when `store` is PostgreSQL and
    neither `args` nor `env` name one; else nothing."""
    if not str(store).startswith("postgres"):
        return []
    if any(a.startswith("--blob-") for a in map(str, args)):
        return []
    if any(k.startswith("COHORT_BLOB_") for k in (env or {})):
        return []
    return ["--blob-dir", str(pathlib.Path(home) / "data" / "blobs")]


def server_on(home, store, *args, env=None):
    """A `cohort server` in `home` on `store` (a PostgreSQL URL or a SQLite file), with `args`
    and `env` (and own_blob_dir's): started and stopped by `with` (running)."""
    return running(ServerProcess(
        home, extra_args=["--store", str(store), *args, *own_blob_dir(home, store, args, env)],
        env=env))


@contextlib.contextmanager
def server_pair(cluster, tmp_path, tag, args=(), env=None, pool_size=4):
    """Two `cohort server` processes on a fresh database of `cluster` (fresh_db), in the homes
    tmp_path/a and tmp_path/b, each with `--store URL` and `args` and `env`. Started one after
    the other: the first makes the admin key, the second finds it in the store. Yields
    (URL, a, b); both are stopped on leaving."""
    url = cluster.url(fresh_db(cluster, tmp_path, tag), f"pool_size={pool_size}")
    with server_on(tmp_path / "a", url, *args, env=env) as a, \
            server_on(tmp_path / "b", url, *args, env=env) as b:
        yield url, a, b


def clients(a, b):
    """An API client of each server, both with the admin key `a` made (the servers read the
    keys from their one store)."""
    key = a.config["api_key"]
    return a.api(key), b.api(key)


def entity_of(api):
    """The entity of `api`'s key."""
    status, me = api.get("/api/v1/viewer")
    assert status == 200, me
    return me["entity"]


def get(api, path, **params):
    """The body of GET `path`?`params`, asserted 200."""
    status, body = api.get(path + ("?" + urllib.parse.urlencode(params) if params else ""))
    assert status == 200, (path, body)
    return body


def put_part(api, entity, sha, size, n, chunk):
    """Uploads `chunk` as part `n` of the blob `sha` of `size` bytes, asserted 200."""
    status, body = api.put(f"/api/v1/blobs/{entity}/{sha}/parts/{n}?size={size}", raw=chunk,
                           headers={"Content-Type": "application/octet-stream"})
    assert status == 200, body




def cohort(*args, check=True):
    """Runs the `cohort` CLI; with `check`, asserts that it exited 0."""
    proc = subprocess.run([str(COHORT_BIN), *args], capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def server_log(cluster, needle):
    """The lines of `cluster`'s server log that hold `needle` (e.g. "ERROR:")."""
    with open(f"{cluster.dir}/server.log", errors="replace") as f:
        return [line for line in f if needle in line]
