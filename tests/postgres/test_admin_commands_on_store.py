"""`cohort keys` and `cohort gc` act on the servers' store only: a PostgreSQL URL naming a
database no server ran on (a mistyped database name) is refused, and nothing is created in it
(the schema's tables were created there before the command found no key in them)."""
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
