"""`cohort keys` and `cohort gc` act on the servers' store only: a PostgreSQL URL naming a
database no server ran on (a mistyped database name) is refused, and nothing is created in it
(the schema's tables were created there before the command found no key in them)."""
import os
import subprocess

from .pg_servers import fresh_db, server_on
from conftest import COHORT_BIN


def tables_of(cluster, db):
    return cluster.psql(db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").strip()


def cohort(*args, env=None):
    return subprocess.run([str(COHORT_BIN), *args], capture_output=True, text=True, timeout=60,
                          env=env)


def test_commands_refuse_a_database_without_a_store_and_create_nothing(cluster, tmp_path):
    empty = fresh_db(cluster, tmp_path, "typo")
    url = cluster.url(empty)
    for args in (["keys", "create", "--entity", "x", "--store", url],
                 ["keys", "list", "--entity", "x", "--store", url],
                 ["gc", "--store", url, "--blob-dir", str(tmp_path / "blobs"), "--apply"]):
        r = cohort(*args)
        assert r.returncode != 0, (args, r.stdout, r.stderr)
        assert "no Cohort store in the database" in r.stderr and "--store" in r.stderr, r.stderr
        assert tables_of(cluster, empty) == "0", args
    # The database a server ran on: the same commands work.
    used = cluster.url(fresh_db(cluster, tmp_path, "used"))
    with server_on(tmp_path / "home", used) as server:
        entity = server.api(server.config["api_key"]).get("/api/v1/viewer")[1]["entity"]
    r = cohort("keys", "create", "--entity", entity, "--store", used)
    assert r.returncode == 0, r.stderr
    r = cohort("gc", "--store", used, "--blob-dir", str(tmp_path / "blobs"))
    assert r.returncode == 0, r.stderr


def test_no_blob_store_named_on_postgresql_is_refused(cluster, tmp_path):
    """A server on a PostgreSQL store (which other servers share) without --blob-dir or
    --blob-s3-* would keep blobs in a directory of its own the others never see: it refuses to
    start, and `cohort gc` refuses to run, naming the flags; a --blob-dir named is taken."""
    url = cluster.url(fresh_db(cluster, tmp_path, "noblob"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("COHORT_")}
    env["HOME"] = str(tmp_path)
    home = tmp_path / "srv"
    r = subprocess.run([str(COHORT_BIN), "server", "--port", "0", "--data-dir", str(home / "data"),
                        "--store", url], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode != 0 and not r.stdout.startswith("http"), (r.stdout, r.stderr)
    for flag in ("--blob-dir", "--blob-s3-endpoint", "--blob-s3-bucket"):
        assert flag in r.stderr, r.stderr
    assert not (home / "data" / "blobs").exists()
    # Named, the server's own directory is taken.
    with server_on(home, url, "--blob-dir", str(home / "data" / "blobs")) as server:
        assert server.api().get("/healthz")[0] == 200
    r = cohort("gc", "--store", url, env=env)
    assert r.returncode != 0, r.stdout
    assert "--blob-dir" in r.stderr and "--blob-s3-endpoint" in r.stderr, r.stderr
    r = cohort("gc", "--store", url, "--blob-dir", str(home / "data" / "blobs"), env=env)
    assert r.returncode == 0, r.stderr
