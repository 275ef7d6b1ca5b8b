"""The password of a PostgreSQL store URL never reaches the server's output: not in the line it
prints when it starts listening, not when the database cannot be reached, in both the
`user:password@` and the `?password=` form."""
import os
import subprocess

import pytest

from conftest import COHORT_BIN, Api, ServerProcess

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
        server = ServerProcess(tmp_path / str(n), ["--store", url]).start()
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
