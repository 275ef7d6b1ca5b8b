"""Fixtures of the PostgreSQL suites (their helpers: pg_servers.py)."""
import pytest

from .pg_cluster import PgCluster


@pytest.fixture(scope="module")
def cluster():
    """A throwaway PostgreSQL cluster (pg_cluster.py) for the test module; each test makes a
    database of its own on it (pg_servers.fresh_db)."""
    with PgCluster() as pg:
        yield pg
