"""Two `cohort server` processes on one PostgreSQL database (docs/operations.md, "Scale-out on
PostgreSQL"): the batches of one run go to both servers alternately, retried on the other
server, and raced to both at once; every point must be stored exactly once and both servers must
answer every query identically."""
import concurrent.futures
import random

import pytest

from conftest import ServerProcess
from .pg_servers import (clients, entity_of, fresh_db, get, own_blob_dir, running, server_log,
                         server_on)

BATCHES = 60  # per writer
ROWS = 20  # steps per batch
KEYS = ("loss", "acc", "lr")


@pytest.fixture
def servers(cluster, tmp_path):
    db = fresh_db(cluster, tmp_path, "two")
    url = cluster.url(db, "pool_size=8")
    # One after the other: the first creates the admin key; the second finds it in the store.
    with server_on(tmp_path / "a", url) as a, \
            running(ServerProcess(tmp_path / "b", extra_args=own_blob_dir(tmp_path / "b", url),
                                  env={"COHORT_STORE": url})) as b:
        yield cluster, db, a, b


def batch(seq, label, explicit_steps):
    """Batch `seq` of a writer: ROWS rows of every key, a system sample and a console line."""
    rows = []
    for i in range(ROWS):
        step = (seq - 1) * ROWS + i
        row = {"time": 1_700_000_000_000 + step, "values": {k: seq * 1000 + i + n / 10
                                                             for n, k in enumerate(KEYS)}}
        if explicit_steps:
            row["step"] = step
        rows.append(row)
    return {"seq": seq, "history": rows,
            "system": [{"time": 1_700_000_000_000 + seq, "values": {"cpu": float(seq)}}],
            "console": [{"time": 1_700_000_000_000 + seq, "stream": "stdout",
                         "text": f"{label} batch {seq}"}]}


def test_two_servers_store_every_point_once_and_answer_alike(servers):
    cluster, db, a, b = servers
    errors_before = len(server_log(cluster, "ERROR:"))
    api_a, api_b = clients(a, b)  # one key: both servers read it from the store
    base = f"/api/v1/runs/{entity_of(api_b)}/shared"
    status, run = api_a.post(base, {"name": "two-servers", "config": {"lr": 0.1}})
    assert status == 201, run
    run_path = f"{base}/{run['id']}"
    # rank_0 logs explicit steps; rank_1 leaves them to the server (assigned in commit order).
    assert api_b.post(f"{run_path}/writers", {"label": "rank_0", "primary": True})[0] == 201
    assert api_a.post(f"{run_path}/writers", {"label": "rank_1", "primary": False,
                                              "update_finish_state": False})[0] == 201
    apis = (api_a, api_b)
    writers = {"rank_0": True, "rank_1": False}  # label -> explicit steps

    def send(api, label, seq):
        status, body = api.post(f"{run_path}/writers/{label}/batches",
                                batch(seq, label, writers[label]))
        assert status == 200, body
        return body["duplicate"]

    # 1. Alternating servers, each batch retried at once on the other server.
    third = BATCHES // 3
    for seq in range(1, third + 1):
        for n, label in enumerate(writers):
            first = apis[(seq + n) % 2]
            other = apis[(seq + n + 1) % 2]
            assert send(first, label, seq) is False
            assert send(other, label, seq) is True  # the retry is acknowledged, not stored

    # 2. Every remaining batch sent to both servers at the same moment (and once more later):
    # exactly one of the racing copies is stored.
    jobs = [(label, seq, api) for label in writers for seq in range(third + 1, BATCHES + 1)
            for api in apis]
    random.Random(5).shuffle(jobs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda j: (j[0], j[1], send(j[2], j[0], j[1])), jobs))
    stored = {}
    for label, seq, duplicate in results:
        stored[(label, seq)] = stored.get((label, seq), 0) + (0 if duplicate else 1)
    assert set(stored.values()) == {1}, "a raced batch was stored twice or not at all"

    # 3. Late retries of old batches to random servers change nothing.
    rng = random.Random(9)
    for _ in range(30):
        label = rng.choice(list(writers))
        assert send(rng.choice(apis), label, rng.randint(1, BATCHES)) is True

    # Exactly once: every value once, dense steps, counts and cursors.
    expected_points = BATCHES * ROWS
    for api in apis:
        for label in writers:
            series = get(api, f"{run_path}/history", keys=",".join(KEYS), writers=label)["series"]
            assert [s["key"] for s in series] == sorted(KEYS)
            for n, k in enumerate(sorted(KEYS)):
                points = series[n]["points"]
                assert len(points) == expected_points
                assert [p[0] for p in points] == list(range(expected_points))
                offset = KEYS.index(k) / 10
                want = sorted(seq * 1000 + i + offset for seq in range(1, BATCHES + 1)
                              for i in range(ROWS))
                assert sorted(p[2] for p in points) == pytest.approx(want)
        ws = {w["label"]: w for w in get(api, f"{run_path}/writers")["writers"]}
        for label in writers:
            assert ws[label]["last_seq"] == BATCHES
            assert ws[label]["next_step"] == expected_points
    assert cluster.psql(db, "SELECT count(*) FROM batches") == str(2 * BATCHES)

    # Both servers answer identically (after the run ends, so that nothing moves).
    status, _ = api_a.post(f"{run_path}/writers/rank_0/finish", {"exit_code": 0})
    assert status == 200
    queries = [
        (f"{run_path}", {}),
        (f"{run_path}/writers", {}),
        (f"{run_path}/keys", {}),
        (f"{run_path}/history", {}),
        (f"{run_path}/history", {"keys": "loss", "buckets": 7}),
        (f"{run_path}/history", {"keys": "loss,acc", "buckets": 100, "min_step": 50}),
        (f"{run_path}/history", {"keys": "loss", "limit": 100, "after_step": 400}),
        (f"{run_path}/system", {"keys": "cpu"}),
        (f"{run_path}/console", {"limit": 10000}),
        (f"{run_path}/console", {"labels": "rank_1", "q": "batch 1"}),
        (base, {}),
    ]
    for path, params in queries:
        from_a, from_b = get(api_a, path, **params), get(api_b, path, **params)
        assert from_a == from_b, path + " " + str(params)
    run_a = get(api_a, run_path)
    assert run_a["state"] == "finished"
    console = get(api_b, f"{run_path}/console", limit=10000)["lines"]
    assert len(console) == 2 * BATCHES
    assert len({line["id"] for line in console}) == 2 * BATCHES
    keys = get(api_a, f"{run_path}/keys")["keys"]
    counts = {(k["key"], k["writer"]): k["count"] for k in keys}
    for label in writers:
        for k in KEYS:
            assert counts[(k, label)] == expected_points
        assert counts[("system/cpu", label)] == BATCHES
    # Batches alternating between servers, retried and raced never made PostgreSQL log an
    # error: the one-round-trip path checks its plan without failing a statement.
    new_errors = server_log(cluster, "ERROR:")[errors_before:]
    assert new_errors == [], new_errors[:5]


def test_ordered_batches_raced_to_both_servers_are_stored_once_without_records(servers):
    """The agent's batches (Cohort-Batch-Ordered: its stream id, docs/api.md), each sent to both
    servers at the same moment in seq order (a retry racing a first try that timed out), then late retries
    to either: every point once, and no exactly-once record left (the stream's highest seq is
    kept instead)."""
    cluster, db, a, b = servers
    api_a, api_b = clients(a, b)
    base = f"/api/v1/runs/{entity_of(api_a)}/ordered"
    status, run = api_a.post(base, {"name": "ordered"})
    assert status == 201, run
    run_path = f"{base}/{run['id']}"
    assert api_b.post(f"{run_path}/writers", {"label": "rank_0", "primary": True})[0] == 201

    def send(api, seq):
        status, body = api.post(f"{run_path}/writers/rank_0/batches",
                                batch(seq, "rank_0", seq % 2 == 0),
                                headers={"Cohort-Batch-Ordered": "agent-1"})
        assert status == 200, body
        return body["duplicate"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for seq in range(1, BATCHES + 1):
            outcomes = list(pool.map(lambda api: send(api, seq), (api_a, api_b)))
            assert sorted(outcomes) == [False, True], (seq, outcomes)
    rng = random.Random(3)
    for _ in range(20):
        assert send(rng.choice((api_a, api_b)), rng.randint(1, BATCHES)) is True

    expected_points = BATCHES * ROWS
    for api in (api_a, api_b):
        series = get(api, f"{run_path}/history", keys=",".join(KEYS), writers="rank_0")["series"]
        assert [s["key"] for s in series] == sorted(KEYS)
        for s in series:
            assert [p[0] for p in s["points"]] == list(range(expected_points)), s["key"]
    assert cluster.psql(db, "SELECT count(*) FROM batches") == "0"
    assert cluster.psql(db, "SELECT stream, seq FROM ordered_streams") == f"agent-1|{BATCHES}"
