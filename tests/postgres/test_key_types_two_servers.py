"""One type per key and run (docs/api.md "Keys") with two `cohort server` processes on one
PostgreSQL database: two writers raced to the two servers, one logging a new key as a histogram
and the other the same key as an image, must not both be stored (each transaction found none of
the other's uncommitted rows and both were answered 200: the run then listed the key twice)."""
import concurrent.futures
import hashlib
import threading

import pytest

from .pg_servers import clients, entity_of, server_pair

PAIRS = 40


@pytest.fixture
def servers(cluster, tmp_path):
    with server_pair(cluster, tmp_path, "keytypes", pool_size=8) as (_, a, b):
        yield a, b


def test_a_key_raced_under_two_types_is_stored_under_one(servers):
    api_a, api_b = clients(*servers)
    base = f"/api/v1/runs/{entity_of(api_a)}/keytypes"
    status, run = api_a.post(base, {"name": "race"})
    assert status == 201, run
    path = f"{base}/{run['id']}"
    assert api_a.post(f"{path}/writers", {"label": "rank_0", "primary": True})[0] == 201
    assert api_b.post(f"{path}/writers", {"label": "rank_1", "primary": False})[0] == 201

    def histogram(i):
        return {"seq": i + 1, "histograms": [{"key": f"k{i}", "step": i, "time": 1_700_000_000_000,
                                              "lo": 0, "hi": 1, "counts": [1, 2]}]}

    def image(i):
        sha = hashlib.sha256(f"img{i}".encode()).hexdigest()
        return {"seq": i + 1, "media": [{"key": f"k{i}", "step": i, "time": 1_700_000_000_000,
                                         "type": "image", "sha256": sha, "size": 10,
                                         "mime": "image/png"}]}

    def race(i):
        gate = threading.Barrier(2)

        def send(api, label, body):
            gate.wait()
            return api.post(f"{path}/writers/{label}/batches", body)[0]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            a = pool.submit(send, api_a, "rank_0", histogram(i))
            b = pool.submit(send, api_b, "rank_1", image(i))
            return a.result(), b.result()

    results = [race(i) for i in range(PAIRS)]
    both = [i for i, r in enumerate(results) if r == (200, 200)]
    assert not both, f"stored under two types: k{both}"
    assert all(sorted(r) == [200, 400] for r in results), results
    status, keys = api_a.get(f"{path}/keys")
    assert status == 200, keys
    types = {}
    for k in keys["keys"]:
        types.setdefault(k["key"], set()).add(k["type"])
    assert all(len(t) == 1 for t in types.values()), types
    assert len(types) == PAIRS
