"""The run's media budget (`--max-run-media-bytes`) with two `cohort server` processes on one
PostgreSQL database (docs/operations.md, "Scale-out on PostgreSQL"): the run's media bytes are
a column of the run moved under its row lock, so what one server stored counts on the other at
once, and batches raced to both servers never take the run past the budget."""
import concurrent.futures
import hashlib

import pytest

from .pg_servers import clients, entity_of, server_log, server_pair

BUDGET = 1000


@pytest.fixture
def servers(cluster, tmp_path):
    with server_pair(cluster, tmp_path, "budget", ["--max-run-media-bytes", str(BUDGET)],
                     pool_size=8) as (_, a, b):
        yield a, b


def image_row(step, size, n=0):
    sha = hashlib.sha256(f"{step}-{n}".encode()).hexdigest()
    return {"key": "samples", "step": step, "time": 1_700_000_000_000 + step, "index": n,
            "type": "image", "sha256": sha, "size": size, "mime": "image/png"}


def test_each_server_counts_what_the_other_stored(servers):
    api_a, api_b = clients(*servers)
    base = f"/api/v1/runs/{entity_of(api_a)}/budget"
    status, run = api_a.post(base, {"name": "two-servers"})
    assert status == 201, run
    path = f"{base}/{run['id']}"
    assert api_a.post(f"{path}/writers", {"label": "rank_0", "primary": True})[0] == 201
    assert api_b.post(f"{path}/writers", {"label": "rank_1", "primary": False})[0] == 201

    def send(api, label, seq, *rows):
        return api.post(f"{path}/writers/{label}/batches", {"seq": seq, "media": list(rows)})
    assert send(api_a, "rank_0", 1, image_row(0, 400))[0] == 200
    assert send(api_b, "rank_1", 1, image_row(0, 400))[0] == 200
    # Server a stored 400 itself; the run holds 800: 300 more is past the budget (the row is
    # refused, the batch stored: seq 2 is taken).
    status, ack = send(api_a, "rank_0", 2, image_row(1, 300))
    assert status == 200 and ack["media_refused"] == 1, (status, ack)
    assert "would hold 1100 bytes" in ack["media_refused_reason"], ack
    # Replacing its own row at step 0 with a smaller one is within it, seen from b as well.
    assert send(api_b, "rank_1", 2, image_row(0, 100))[0] == 200   # the run: 500
    status, ack = send(api_a, "rank_0", 3, image_row(1, 500))      # 1000, to the byte
    assert status == 200 and "media_refused" not in ack, ack
    status, ack = send(api_b, "rank_1", 3, image_row(1, 1))
    assert status == 200 and "would hold 1001 bytes" in ack["media_refused_reason"], ack


def run_on_both(servers, name, writers=4):
    """A new run with `writers` writers joined alternately through the two servers: (an API
    client per server, the run's path, the writers' labels)."""
    apis = clients(*servers)
    base = f"/api/v1/runs/{entity_of(apis[0])}/budget"
    status, run = apis[0].post(base, {"name": name})
    assert status == 201, run
    path = f"{base}/{run['id']}"
    labels = [f"rank_{i}" for i in range(writers)]
    for i, label in enumerate(labels):
        assert apis[i % 2].post(f"{path}/writers", {"label": label, "primary": i == 0})[0] == 201
    return apis, path, labels


def test_batches_raced_to_both_servers_fill_the_budget_exactly(servers):
    apis, path, labels = run_on_both(servers, "race")

    def send(job):
        label, seq = job
        api = apis[(labels.index(label) + seq) % 2]
        status, ack = api.post(f"{path}/writers/{label}/batches",
                               {"seq": seq, "media": [image_row(seq, 100, labels.index(label))]})
        assert status == 200, ack  # the batch is stored; its row may be refused
        return "refused" if ack.get("media_refused") else "stored"
    jobs = [(label, seq) for seq in range(1, 9) for label in labels]  # 32 x 100 bytes
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(send, jobs))
    assert sorted(set(statuses)) == ["refused", "stored"], statuses
    assert statuses.count("stored") == BUDGET // 100, statuses
    status, media = apis[1].get(f"{path}/media?keys=samples")
    assert status == 200
    assert sum(m["size"] for m in media["media"]) == BUDGET, media


def test_writers_racing_histograms_and_media_never_deadlock(cluster, servers):
    """Every batch here inserts rows naming the run (series, histograms: KEY SHARE locks on the
    run row) before it locks the run row for its media bytes: that lock must not conflict with
    the others' KEY SHARE locks (FOR UPDATE did: two writers deadlocked, and PostgreSQL aborted
    one of them, retried by the server after ~1 s)."""
    before = len(server_log(cluster, "deadlock detected"))
    apis, path, labels = run_on_both(servers, "no-deadlock")

    def send(job):
        label, seq = job
        n = labels.index(label)
        t = 1_700_000_000_000 + seq
        body = {"seq": seq,
                "history": [{"step": seq, "time": t, "values": {f"loss_{seq % 3}": 0.5}}],
                "histograms": [{"key": f"grad/{seq % 2}", "step": seq, "time": t, "lo": 0,
                                "hi": 1, "counts": [1, 2, 3]}],
                "media": [image_row(seq, 10, n)]}
        status, answer = apis[(n + seq) % 2].post(f"{path}/writers/{label}/batches", body)
        return status, answer
    jobs = [(label, seq) for seq in range(1, 16) for label in labels]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, jobs))
    assert all(status == 200 for status, _ in answers), [a for a in answers if a[0] != 200][:3]
    assert server_log(cluster, "deadlock detected")[before:] == []
    status, media = apis[1].get(f"{path}/media?keys=samples")
    assert status == 200 and len(media["media"]) == len(jobs), media
