"""The rank-insight routes on a server backed by PostgreSQL (a real cluster started by the test):
the same checks as on SQLite (tests/distributed/ranks_checks.py). PostgreSQL stores one small
chunk per batch and compacts later, so the aggregation meets another chunk layout here."""
import pathlib
import sys

import pytest

from conftest import ServerProcess
from pg_cluster import PgCluster

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "distributed"))
from ranks_checks import check_gpu_utilisation, check_group_aggregate  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with PgCluster() as pg:
        yield pg


def test_group_aggregate_and_stragglers_on_postgres(cluster, tmp_path):
    db = "ranks_" + tmp_path.name.replace("-", "_").lower()[-40:]
    cluster.create_database(db)
    server = ServerProcess(tmp_path / "s", extra_args=["--store", cluster.url(db)]).start()
    try:
        api = server.api()
        status, me = api.get("/api/v1/viewer")
        assert status == 200, me
        # Batches of 250 rows: chunks of a series do not start at multiples of 1,024 until
        # compacted, so some buckets are computed from decoded points.
        check_group_aggregate(api, me["entity"], batch=250)
        check_gpu_utilisation(api, me["entity"])
    finally:
        server.stop()
