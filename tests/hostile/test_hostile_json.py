"""Hostile JSON: deep nesting anywhere a body or parameter is JSON (a clear 400, no stack
overflow), numbers beyond a double, and a batch of a million distinct keys (413 with bounded
memory; the per-batch key limit is what bounds a run's series, docs/operations.md)."""
import json
import urllib.parse

from hostile_util import assert_healthy, exchange, json_error, request, rss_kb, start


def setup_run(server):
    key = server.config["api_key"]
    status, _, body = exchange(server, request("GET", "/api/v1/viewer", key=key))
    entity = json.loads(body)["entity"]
    runs = f"/api/v1/runs/{entity}/p"
    assert exchange(server, request("POST", runs, {"id": "r1"}, key=key))[0] == 201
    assert exchange(server, request("POST", f"{runs}/r1/writers", {"label": "w"}, key=key))[0] == 201
    return key, entity, runs


def test_deep_nesting_is_a_clear_400_everywhere(tmp_path):
    server = start(tmp_path)
    try:
        key, entity, runs = setup_run(server)
        for depth in (100, 100000, 4 << 20):
            deep = "[" * depth + "]" * depth
            obj = '{"a":' * min(depth, 200000) + "1" + "}" * min(depth, 200000)
            bodies = [
                ("POST", runs, deep),
                ("POST", runs, '{"id": "r2", "config": ' + obj + "}"),
                ("PATCH", f"{runs}/r1", '{"summary": ' + obj + "}"),
                ("POST", f"{runs}/r1/writers/w/batches",
                 '{"seq": 1, "history": [{"step": 0, "time": 1, "values": ' + obj + "}]}"),
                ("POST", f"/api/v1/views/{entity}/p", '{"name": "v", "spec": ' + obj + "}"),
                ("POST", f"{runs}/r1/writers", '{"label": "x", "gpu_ids": ' + deep + "}"),
            ]
            for method, path, body in bodies:
                status, _, answer = exchange(server, request(method, path, body, key=key))
                assert status in (400, 413), (method, path, depth, status, answer[:200])
                message = json_error(answer)["message"]
                if status == 400 and depth > 100:
                    assert "nesting" in message or "expected" in message, message
            # GraphQL: JSON nesting in the body and selection nesting in the query.
            status, _, answer = exchange(server, request(
                "POST", "/graphql", '{"query": "{ viewer { id } }", "variables": ' + obj + "}",
                headers=[f"Authorization: Basic {basic(key)}"]))
            assert status == 400 and "errors" in json.loads(answer), (status, answer[:200])
            query = "{" * min(depth, 500000) + "}" * min(depth, 500000)
            status, _, answer = exchange(server, request(
                "POST", "/graphql", {"query": query}, headers=[f"Authorization: Basic {basic(key)}"]))
            assert status in (200, 400, 413) and "errors" in json.loads(answer), (status, answer[:200])
        # A JSON query parameter.
        filters = urllib.parse.quote("[" * 10000 + "]" * 10000)
        status, _, answer = exchange(server, request("GET", f"{runs}?filters={filters}", key=key))
        assert status in (400, 431), status
        # Nothing was stored.
        status, _, answer = exchange(server, request("GET", runs, key=key))
        assert [r["id"] for r in json.loads(answer)["runs"]] == ["r1"]
        status, _, answer = exchange(server, request("GET", f"{runs}/r1", key=key))
        run = json.loads(answer)
        assert run["summary"] == {} and run["writer_count"] == 1
        assert_healthy(server)
    finally:
        server.stop()


def basic(key):
    import base64
    return base64.b64encode(f"api:{key}".encode()).decode()


def test_numbers_beyond_a_double_are_400_not_stored_as_invalid_json(tmp_path):
    server = start(tmp_path)
    try:
        key, entity, runs = setup_run(server)
        status, _, answer = exchange(server, request(
            "PATCH", f"{runs}/r1", '{"config": {"lr": 1e999}}', key=key))
        assert status == 400 and "range of a double" in json_error(answer)["message"]
        status, _, answer = exchange(server, request(
            "POST", f"{runs}/r1/writers/w/batches",
            '{"seq": 1, "history": [{"step": 0, "time": 1, "values": {"x": -1e400}}]}', key=key))
        assert status == 400
        status, _, answer = exchange(server, request("GET", f"{runs}/r1", key=key))
        assert status == 200 and json.loads(answer)["config"] == {}  # valid JSON, nothing stored
    finally:
        server.stop()


def test_a_million_distinct_keys_is_413_with_bounded_memory(tmp_path):
    server = start(tmp_path)
    try:
        key, entity, runs = setup_run(server)
        rss_before = rss_kb(server)
        values = ",".join(f'"k{i}":{i}' for i in range(1000000))
        body = '{"seq": 1, "history": [{"step": 0, "time": 1, "values": {' + values + "}}]}"
        assert len(body) < 32 << 20  # under the default body limit: the key limit must catch it
        status, _, answer = exchange(server, request(
            "POST", f"{runs}/r1/writers/w/batches", body, key=key), deadline_s=120)
        assert status == 413 and "distinct keys" in json_error(answer)["message"]
        # Spread over rows, too.
        rows = ",".join('{"step": %d, "time": 1, "values": {"k%d": 1}}' % (i, i)
                        for i in range(200000))
        status, _, answer = exchange(server, request(
            "POST", f"{runs}/r1/writers/w/batches", '{"seq": 2, "history": [' + rows + "]}",
            key=key), deadline_s=120)
        assert status == 413 and "distinct keys" in json_error(answer)["message"]
        grown_mb = (rss_kb(server) - rss_before) / 1024
        assert grown_mb < 512, f"RSS grew by {grown_mb:.0f} MiB"
        status, _, answer = exchange(server, request("GET", f"{runs}/r1/keys", key=key))
        assert json.loads(answer)["keys"] == []
        assert_healthy(server)
    finally:
        server.stop()


def keys_batch(seq, first, count, step=0):
    values = ",".join(f'"k{i}":{i}' for i in range(first, first + count))
    return '{"seq": %d, "history": [{"step": %d, "time": 1, "values": {%s}}]}' % (seq, step, values)


def test_millions_of_distinct_keys_into_one_run_stop_at_the_run_key_limit(tmp_path):
    """A client logging ever new keys into one run: 100,000 distinct keys (the default per-run
    limit, docs/operations.md) are stored, then every batch bringing a new key is a 413 naming
    the limit, while batches of known keys go on; memory stays bounded."""
    server = start(tmp_path)
    try:
        key, entity, runs = setup_run(server)
        batches = f"{runs}/r1/writers/w/batches"
        rss_before = rss_kb(server)
        for seq in range(1, 11):  # 10 x 10,000 new keys: up to the limit
            status, _, answer = exchange(server, request(
                "POST", batches, keys_batch(seq, (seq - 1) * 10000, 10000, seq), key=key),
                deadline_s=120)
            assert status == 200, (seq, status, answer[:300])
        # 2,000,000 more distinct keys offered, 10,000 per batch: each refused whole.
        for seq in range(11, 211):
            status, _, answer = exchange(server, request(
                "POST", batches, keys_batch(seq, seq * 10000, 10000, seq), key=key),
                deadline_s=120)
            assert status == 413, (seq, status, answer[:300])
            message = json_error(answer)["message"]
            assert "limit is 100000 distinct keys per run" in message, message
        # One new key among known ones: refused whole (nothing of it stored) ...
        status, _, answer = exchange(server, request(
            "POST", batches,
            '{"seq": 300, "history": [{"step": 300, "time": 1, "values": {"k0": 1, "fresh": 2}}]}',
            key=key))
        assert status == 413, (status, answer[:300])
        # ... known keys go on, from this writer and from another one of the run.
        status, _, answer = exchange(server, request("POST", batches, keys_batch(301, 5, 3, 301),
                                                     key=key))
        assert status == 200 and json.loads(answer)["points"] == 3, answer
        assert exchange(server, request("POST", f"{runs}/r1/writers", {"label": "w2"},
                                        key=key))[0] == 201
        status, _, answer = exchange(server, request(
            "POST", f"{runs}/r1/writers/w2/batches", keys_batch(1, 7, 2), key=key))
        assert status == 200, answer
        grown_mb = (rss_kb(server) - rss_before) / 1024
        assert grown_mb < 256, f"RSS grew by {grown_mb:.0f} MiB"
        status, _, answer = exchange(server, request("GET", f"{runs}/r1/keys", key=key),
                                     deadline_s=60)
        keys = json.loads(answer)["keys"]
        names = {k["key"] if isinstance(k, dict) else k for k in keys}
        assert len(names) == 100000 and "fresh" not in names and "k100000" not in names
        # Another run has its own budget.
        assert exchange(server, request("POST", runs, {"id": "r2"}, key=key))[0] == 201
        assert exchange(server, request("POST", f"{runs}/r2/writers", {"label": "w"},
                                        key=key))[0] == 201
        status, _, answer = exchange(server, request(
            "POST", f"{runs}/r2/writers/w/batches", keys_batch(1, 500000, 10), key=key))
        assert status == 200, answer
        assert_healthy(server)
    finally:
        server.stop()


def test_run_key_limit_comes_from_the_tier_in_the_limits_file(tmp_path):
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"default_tier": "small",
                                  "tiers": {"small": {"keys_per_run": 5}}}))
    server = start(tmp_path, "--limits", str(limits))
    try:
        key, entity, runs = setup_run(server)
        batches = f"{runs}/r1/writers/w/batches"
        assert exchange(server, request("POST", batches, keys_batch(1, 0, 5), key=key))[0] == 200
        status, _, answer = exchange(server, request("POST", batches, keys_batch(2, 5, 1, 1),
                                                     key=key))
        assert status == 413 and "limit is 5 distinct keys per run" in json_error(answer)["message"]
        # System metrics count too (as system/<key>).
        status, _, answer = exchange(server, request(
            "POST", batches, '{"seq": 3, "system": [{"time": 1, "values": {"gpu.0.util": 5}}]}',
            key=key))
        assert status == 413, answer
    finally:
        server.stop()
