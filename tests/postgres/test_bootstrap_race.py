"""Several `cohort server` processes started at once on one empty PostgreSQL database
(docs/operations.md, "Scale-out on PostgreSQL"): exactly one of them creates the bootstrap admin
key (Store::CreateFirstApiKey, an advisory lock), and that key works on every server."""
import concurrent.futures

from conftest import Api, ServerProcess
from .pg_servers import fresh_db, own_blob_dir

SERVERS = 4


def test_servers_starting_together_create_one_admin_key(cluster, tmp_path):
    db = fresh_db(cluster, tmp_path, "boot")
    url = cluster.url(db)
    procs = [ServerProcess(tmp_path / f"s{i}",
                           extra_args=["--store", url, *own_blob_dir(tmp_path / f"s{i}", url)])
             for i in range(SERVERS)]
    try:
        with concurrent.futures.ThreadPoolExecutor(SERVERS) as pool:
            list(pool.map(lambda p: p.start(), procs))
        assert cluster.psql(db, "SELECT count(*) FROM api_keys") == "1"
        # The winner wrote its key to its user config; the others found a key and wrote none.
        configs = [p.home / ".config" / "cohort" / "config.json" for p in procs]
        winners = [p for p, c in zip(procs, configs) if c.exists()]
        assert len(winners) == 1, [str(c) for c in configs if c.exists()]
        key = winners[0].config["api_key"]
        for p in procs:
            status, body = Api(p.url, key).get("/api/v1/viewer")
            assert status == 200, body
    finally:
        for p in procs:
            p.stop()
