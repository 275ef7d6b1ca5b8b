"""The rank-insight routes on a server backed by PostgreSQL (a real cluster started by the test):
the same checks as on SQLite (tests/distributed/ranks_checks.py). PostgreSQL stores one small
chunk per batch and compacts later, so the aggregation meets another chunk layout here."""
import pathlib
import sys

from .pg_servers import entity_of, fresh_db, server_on

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from ranks_checks import check_gpu_utilisation, check_group_aggregate  # noqa: E402


def test_group_aggregate_and_stragglers_on_postgres(cluster, tmp_path):
    db = fresh_db(cluster, tmp_path, "ranks")
    with server_on(tmp_path / "s", cluster.url(db)) as server:
        api = server.api()
        entity = entity_of(api)
        # Batches of 250 rows: chunks of a series do not start at multiples of 1,024 until
        # compacted, so some buckets are computed from decoded points.
        check_group_aggregate(api, entity, batch=250)
        check_gpu_utilisation(api, entity)
