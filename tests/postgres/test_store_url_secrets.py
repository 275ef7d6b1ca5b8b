"""The password of a PostgreSQL store URL never reaches the server's output: not in the line it
prints when it starts listening, not when the database cannot be reached, in both the
`user:password@` and the `?password=` form."""
import os
import subprocess

import pytest

from conftest import COHORT_BIN, Api, ServerProcess
from .pg_servers import own_blob_dir

PASSWORD = "Sup3rSecretPw"


@pytest.fixture(scope="module")
def cluster(cluster):
    """conftest.py's, with a database "cohort" (trust authentication: a password in the URL is
    accepted unused)."""
    cluster.create_database("cohort")
    return cluster


def output_of(server):
    server.stop()
    return server.proc.stdout.read() + server.proc.stderr.read()


def test_store_password_never_reaches_the_logs(cluster, tmp_path):
    forms = [
        f"postgresql://postgres:{PASSWORD}@/cohort?host={cluster.dir}&port={cluster.port}",
        f"postgresql://postgres@/cohort?host={cluster.dir}&port={cluster.port}&password={PASSWORD}",
    ]
    for n, url in enumerate(forms):
        server = ServerProcess(tmp_path / str(n),
                               ["--store", url, *own_blob_dir(tmp_path / str(n), url)]).start()
        assert Api(server.url, "").get("/healthz")[0] == 200
        out = output_of(server)
        assert "listening on" in out and "***" in out, out
        assert PASSWORD not in out, out
    # A database that cannot be reached: the error names where, never the password.
    bad = f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/cohort?connect_timeout=2"
    r = subprocess.run([str(COHORT_BIN), "server", "--port", "0", "--data-dir",
                        str(tmp_path / "bad"), "--store", bad], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, HOME=str(tmp_path)))
    assert r.returncode == 1, r.stderr
    assert PASSWORD not in r.stdout + r.stderr, r.stderr


# Malformed store URLs holding a password: libpq's parse messages quote the text they stop at
# (the whole URL, or the password itself), a misspelled scheme is no URL to redact.
MALFORMED = [
    ("hunter2", "postgresql://cohort:hunter2@[::1/cohort"),
    ("se%ZZcret", "postgresql://cohort:se%ZZcret@localhost/cohort"),
    ("hunter2", "postgersql://cohort:hunter2@localhost/cohort"),
    ("hunter2", "postgres://cohort@[::1/cohort?password=hunter2"),
]


@pytest.mark.parametrize("password,url", MALFORMED)
def test_malformed_store_url_never_prints_its_password(tmp_path, password, url):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COHORT_")}
    env["HOME"] = str(tmp_path)
    # A SQLite store (an empty file is made one) and its dump, the other end of each copy.
    source = tmp_path / "source.db"
    source.write_bytes(b"")
    dump = tmp_path / "dump"
    subprocess.run([str(COHORT_BIN), "export", "--store", str(source), "--out", str(dump),
                    "--progress", "never"], check=True, env=env, timeout=60)
    commands = [
        ["server", "--port", "0", "--data-dir", str(tmp_path / "srv"), "--store", url],
        ["gc", "--store", url],
        ["keys", "create", "--entity", "e", "--store", url],
        ["keys", "list", "--entity", "e", "--store", url],
        ["keys", "revoke", "--entity", "e", "--store", url, "1"],
        ["export", "--store", url, "--out", str(tmp_path / "out")],
        ["import", "--store", url, "--in", str(dump)],
        ["migrate", "--from", url, "--to", str(tmp_path / "to.db")],
        ["migrate", "--from", str(source), "--to", url],
    ]
    for args in commands:
        r = subprocess.run([str(COHORT_BIN), *args], capture_output=True, text=True, timeout=60,
                           env=env, stdin=subprocess.DEVNULL)
        out = r.stdout + r.stderr
        assert r.returncode != 0, (args, out)
        assert password not in out, (args, out)
        assert out.strip(), args
