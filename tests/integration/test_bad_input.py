"""Bad input gets a 4xx with a JSON error naming the problem, and nothing of it is stored."""
import urllib.parse

import pytest

from test_api import entity, history, ingest, join, make_run, runs_path


@pytest.fixture
def run(api):
    r = make_run(api)
    join(api, r, "w")
    return r


def batches(api, run):
    return f"{runs_path(api)}/{run['id']}/writers/w/batches"


def assert_error(status, body, code, field):
    assert status == code, body
    assert "error" in body, body
    assert field in body["error"]["message"], body["error"]["message"]


def assert_nothing_stored(api, run):
    assert history(api, run) == []
    _, lines = api.get(f"{runs_path(api)}/{run['id']}/console")
    assert lines["lines"] == []


def test_malformed_json_is_400(api, run):
    status, body = api.post(batches(api, run), raw=b'{"seq": 1, "history": [')
    assert_error(status, body, 400, "malformed JSON")
    assert_nothing_stored(api, run)


def test_wrong_type_names_the_field(api, run):
    status, body = ingest(api, run, "w", {"seq": 1, "history": [
        {"step": 0, "time": 1, "values": {"ok": 1}},
        {"step": 1, "time": 1, "values": {"loss": [1, 2]}}]})
    assert_error(status, body, 400, "history[1].values.loss")
    assert_nothing_stored(api, run)


def test_unknown_field_is_rejected(api, run):
    status, body = ingest(api, run, "w", {"seq": 1, "histroy": []})
    assert_error(status, body, 400, "histroy: unknown field")


def test_missing_seq_is_rejected(api, run):
    status, body = ingest(api, run, "w", {"history": []})
    assert_error(status, body, 400, "seq: required")


def test_missing_run_is_404(api):
    status, body = api.post(f"{runs_path(api)}/nosuchrun/writers/w/batches", {"seq": 1})
    assert_error(status, body, 404, "nosuchrun")


def test_unknown_writer_is_404(api, run):
    status, body = ingest(api, run, "ghost", {"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": 1}}]})
    assert_error(status, body, 404, "ghost")
    assert_nothing_stored(api, run)


def test_oversized_body_is_413(tmp_path):
    from conftest import ServerProcess
    s = ServerProcess(tmp_path, ["--max-body-bytes", "1000"]).start()
    try:
        api = s.api()
        r = make_run(api)
        join(api, r, "w")
        rows = [{"step": i, "time": 1, "values": {"x": 1.0}} for i in range(200)]
        status, body = ingest(api, r, "w", {"seq": 1, "history": rows})
        assert status == 413 and "error" in body
        assert history(api, r) == []
    finally:
        s.stop()


def test_too_many_keys_in_batch_is_413(tmp_path):
    from conftest import ServerProcess
    s = ServerProcess(tmp_path, ["--max-keys-per-batch", "5"]).start()
    try:
        api = s.api()
        r = make_run(api)
        join(api, r, "w")
        status, body = ingest(api, r, "w", {"seq": 1, "history": [
            {"step": 0, "time": 1, "values": {f"k{i}": i for i in range(6)}}]})
        assert_error(status, body, 413, "distinct keys")
        assert history(api, r) == []
    finally:
        s.stop()


def test_non_utf8_text_is_400(api, run):
    raw = b'{"seq": 1, "console": [{"time": 1, "text": "bad \xff\xfe bytes"}]}'
    status, body = api.post(batches(api, run), raw=raw)
    assert_error(status, body, 400, "body")
    assert_nothing_stored(api, run)


def test_nan_as_bare_token_is_rejected_but_string_accepted(api, run):
    status, body = api.post(batches(api, run), raw=b'{"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": NaN}}]}')
    assert status == 400
    status, body = ingest(api, run, "w", {"seq": 1, "history": [{"step": 0, "time": 1, "values": {"a": "NaN"}}]})
    assert status == 200


def test_bad_run_id_is_400(api):
    status, body = api.post(runs_path(api), {"id": "has/slash"})
    assert_error(status, body, 400, "id")


def test_wrong_type_in_run_create_names_field(api):
    status, body = api.post(runs_path(api), {"name": 5})
    assert_error(status, body, 400, "name: expected a string")
    status, body = api.post(runs_path(api), {"config": [1]})
    assert_error(status, body, 400, "config: expected an object")


def test_bad_filter_op_is_400(api):
    f = urllib.parse.quote('[{"field": "state", "op": "like", "value": "x"}]')
    status, body = api.get(runs_path(api) + "?filters=" + f)
    assert_error(status, body, 400, "filters[0].op")


def test_bad_integer_param_is_400(api, run):
    status, body = api.get(f"{runs_path(api)}/{run['id']}/history?buckets=lots")
    assert_error(status, body, 400, "buckets")


def test_negative_step_is_400(api, run):
    status, body = ingest(api, run, "w", {"seq": 1, "history": [{"step": -4, "time": 1, "values": {"a": 1}}]})
    assert_error(status, body, 400, "history[0].step")


def test_step_counter_overflow_is_400_naming_the_row_and_nothing_is_stored(api, run):
    top = 2**63 - 1
    status, body = ingest(api, run, "w", {"seq": 1, "history": [
        {"step": top, "time": 1, "values": {"a": 1}}]})
    assert status == 200, body
    # The writer's step counter now has no step left for a row without one.
    status, body = ingest(api, run, "w", {"seq": 2, "history": [
        {"step": 3, "time": 2, "values": {"a": 2}}, {"time": 3, "values": {"a": 3}}],
        "console": [{"time": 3, "stream": "stdout", "text": "kept?"}]})
    assert_error(status, body, 400, "history[1].step")
    series = history(api, run, keys="a")
    assert [p[0] for p in series[0]["points"]] == [top]
    _, lines = api.get(f"{runs_path(api)}/{run['id']}/console")
    assert lines["lines"] == []


def test_unknown_route_is_404_json_and_wrong_method_405(api):
    status, body = api.get("/api/v1/nothing/here")
    assert status == 404 and "error" in body
    status, body = api.call("PUT", "/api/v1/viewer")
    assert status == 405 and "error" in body


@pytest.mark.parametrize("lo,hi", [(-(2**63) + 1, 2**63 - 1), (0, 2**63 - 2), (-(2**63), 0)])
def test_stragglers_over_any_time_range_answer_without_overflow(api, server, run, lo, hi):
    # The matrix's time span overflowed int64: a column index past its vector freed a corrupt
    # heap block (the server aborted) or a negative count answered 500.
    assert ingest(api, run, "w", {"seq": 1, "history": [
        {"step": s, "time": 1000 + s, "values": {"loss": 1.0}} for s in range(4)]})[0] == 200
    q = urllib.parse.urlencode({"min_time": lo, "max_time": hi})
    status, body = api.get(f"{runs_path(api)}/{run['id']}/ranks/stragglers?{q}")
    assert status == 200, body
    times = body["matrix"]["times"]
    assert times[0] == lo and all(lo <= t <= hi for t in times), times
    assert server.proc.poll() is None
    assert api.get("/healthz")[0] == 200
