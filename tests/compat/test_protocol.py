"""Request sequences written from the reference (../shared/reference/wandb-wire.md): what the
vendor's clients send, including the retries and overlaps they produce, checked through
Cohort's own API."""
import json
import threading

import pytest

from .compat_helpers import history_line


def points(api, entity, run, key, writer=None, project="proj"):
    path = f"/api/v1/runs/{entity}/{project}/{run}/history?keys={key}"
    if writer:
        path += f"&writers={writer}"
    status, body = api.get(path)
    assert status == 200, body
    return {s["writer"]: s["points"] for s in body["series"]}


def console(api, entity, run, project="proj", **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    status, body = api.get(f"/api/v1/runs/{entity}/{project}/{run}/console?{query}")
    assert status == 200, body
    return body["lines"]


def writers(api, entity, run, project="proj"):
    status, body = api.get(f"/api/v1/runs/{entity}/{project}/{run}/writers")
    assert status == 200, body
    return {w["label"]: w for w in body["writers"]}


def get_run(api, entity, run, project="proj"):
    status, body = api.get(f"/api/v1/runs/{entity}/{project}/{run}")
    assert status == 200, body
    return body


def test_init_upsert_stream_retries_and_complete(wire, api, entity):
    config = {"lr": {"value": 0.1, "desc": None}, "layers": {"value": [64, 64]},
              "_wandb": {"value": {"cli_version": "0.31.0", "t": {"1": [1, 2]}}}}
    bucket = wire.upsert("plain1", groupName="g", jobType="train", displayName="first",
                         notes="hello", tags=["a", "b"], host="node1",
                         config=json.dumps(config), program="train.py")["bucket"]
    assert bucket["name"] == "plain1"
    assert bucket["displayName"] == "first"
    assert bucket["historyLineCount"] == 0
    assert bucket["project"] == {"id": f"{entity}/proj", "name": "proj",
                                 "entity": {"id": entity, "name": entity}}
    assert json.loads(bucket["config"]) == {"lr": {"value": 0.1}, "layers": {"value": [64, 64]}}
    run = get_run(api, entity, "plain1")
    assert run["config"] == {"lr": 0.1, "layers": [64, 64]}
    assert run["metadata"]["wandb"]["cli_version"] == "0.31.0"
    assert run["metadata"]["program"] == "train.py"
    assert (run["group"], run["job_type"], run["name"], run["notes"], run["tags"], run["host"]) == \
        ("g", "train", "first", "hello", ["a", "b"], "node1")

    chunk = {"files": {"wandb-history.jsonl": {
        "offset": 0, "content": [history_line(i, loss=1.0 / (i + 1)) for i in range(10)]}}}
    assert wire.file_stream(entity, "proj", "plain1", chunk)[0] == 200
    assert wire.file_stream(entity, "proj", "plain1", chunk)[0] == 200  # a retry
    # A resend that overlaps: lines 5..14, of which 10..14 are new.
    overlap = {"files": {"wandb-history.jsonl": {
        "offset": 5, "content": [history_line(i, loss=1.0 / (i + 1)) for i in range(5, 15)]},
        "wandb-events.jsonl": {"offset": 0, "content": [json.dumps({
            "system.cpu": 12.5, "system.gpu.0.temp": 61, "_wandb": True,
            "_timestamp": 1700000001.0, "_runtime": 1.0})]},
        "output.log": {"offset": 0, "content": [
            "2024-05-01T12:00:00.000000 epoch 1",
            "ERROR 2024-05-01T12:00:00.100000 warning: slow",
            "2024-05-01T12:00:00.200000 progress 10%"]}}}
    assert wire.file_stream(entity, "proj", "plain1", overlap)[0] == 200
    assert wire.file_stream(entity, "proj", "plain1", overlap)[0] == 200
    # The progress bar line is re-sent at its offset: it replaces the stored line.
    progress = {"files": {"output.log": {"offset": 2, "content": [
        "2024-05-01T12:00:01.000000 progress 100%", "2024-05-01T12:00:01.100000 done"]}}}
    assert wire.file_stream(entity, "proj", "plain1", progress)[0] == 200
    assert wire.file_stream(entity, "proj", "plain1", {})[0] == 200  # heartbeat
    summary = {"files": {"wandb-summary.json": {"offset": 0, "content": [
        json.dumps({"loss": 0.06, "best": 3, "_step": 14, "_wandb": {"runtime": 2}})]}},
        "uploaded": ["config.yaml"], "complete": True, "exitcode": 0}
    assert wire.file_stream(entity, "proj", "plain1", summary)[0] == 200
    assert wire.file_stream(entity, "proj", "plain1", summary)[0] == 200  # retried end

    series = points(api, entity, "plain1", "loss")
    assert len(series) == 1
    (label, pts), = series.items()
    assert [p[0] for p in pts] == list(range(15))
    assert [p[2] for p in pts] == pytest.approx([1.0 / (i + 1) for i in range(15)], rel=1e-12)
    assert pts[3][1] == 1700000003000  # _timestamp -> time in ms
    status, system = api.get(f"/api/v1/runs/{entity}/proj/plain1/system")
    assert sorted(s["key"] for s in system["series"]) == ["cpu", "gpu.0.temp"]
    lines = console(api, entity, "plain1")
    assert [(l["stream"], l["text"]) for l in lines] == [
        ("stdout", "epoch 1"), ("stderr", "warning: slow"), ("stdout", "progress 100%"),
        ("stdout", "done")]
    run = get_run(api, entity, "plain1")
    assert run["state"] == "finished" and run["exit_code"] == 0
    assert run["summary"] == {"loss": 0.06, "best": 3}
    ws = writers(api, entity, "plain1")
    assert list(ws) == ["node1"]  # a plain client writes as its host
    assert ws["node1"]["primary"] and ws["node1"]["state"] == "finished"


def test_failed_exit_code_and_resume_status(wire, api, entity):
    wire.upsert("fails")
    lines = [history_line(i, acc=i) for i in range(3)]
    wire.file_stream(entity, "proj", "fails", {"files": {"wandb-history.jsonl": {
        "offset": 0, "content": lines}}})
    status, payload = wire.gql("""
        query RunResumeStatus($project: String, $entity: String, $name: String!) {
          model(name: $project, entityName: $entity) {
            id name entity { id name }
            bucket(name: $name, missingOk: true) {
              id name summaryMetrics displayName logLineCount historyLineCount eventsLineCount
              historyTail eventsTail config tags wandbConfig(keys: ["t"])
            }
          }
        }""", {"project": "proj", "entity": entity, "name": "fails"})
    assert status == 200 and "errors" not in payload, payload
    bucket = payload["data"]["model"]["bucket"]
    assert bucket["historyLineCount"] == 3
    tail = json.loads(bucket["historyTail"])
    assert json.loads(tail[-1])["_step"] == 2 and json.loads(tail[-1])["acc"] == 2
    status, payload = wire.gql("""query RunResumeStatus($project: String, $entity: String,
        $name: String!) { model(name: $project, entityName: $entity) {
        bucket(name: $name, missingOk: true) { id } } }""",
                               {"project": "proj", "entity": entity, "name": "nope"})
    assert payload["data"]["model"]["bucket"] is None

    # A resumed client continues at the line count it was given.
    more = [history_line(i, acc=i) for i in range(3, 5)]
    wire.file_stream(entity, "proj", "fails", {"files": {"wandb-history.jsonl": {
        "offset": 3, "content": more}}, "complete": True, "exitcode": 3})
    assert [p[0] for p in points(api, entity, "fails", "acc").popitem()[1]] == [0, 1, 2, 3, 4]
    run = get_run(api, entity, "fails")
    assert run["state"] == "failed" and run["exit_code"] == 3


def shared_client(server, client_id):
    from .compat_helpers import WandbWire
    return WandbWire(server.url, server.config["api_key"], client_id=client_id)


def test_shared_mode_three_clients(server, api, entity):
    ids = ["01a22e0b687e7c768488d3f89097307d", "01a22e0b710f7e1e94737630a0b84cba",
           "01a22e0b803d79a8ba22d702a6fd87c7"]
    clients = [shared_client(server, i) for i in ids]
    clients[0].upsert("shr", groupName="ddp", jobType="train",
                      config=json.dumps({"lr": {"value": 0.1}}))
    clients[1].upsert("shr", groupName="ddp", jobType="train")
    # The primary uploads the run's metadata: that is how Cohort tells it from the workers.
    status, payload = clients[0].gql("""mutation CreateRunFiles($entity: String!, $project: String!,
        $run: String!, $files: [String!]!) { createRunFiles(input: {entityName: $entity,
        projectName: $project, runName: $run, files: $files}) { runID uploadHeaders
        files { name uploadUrl } } }""", {"entity": entity, "project": "proj", "run": "shr",
                                           "files": ["wandb-metadata.json"]})
    assert "errors" not in payload, payload

    def send(rank, offset, n, structured=False):
        label = f"rank_{rank}"
        events = json.dumps({f"system.cpu/l:{label}": rank * 10.0,
                             f"system.gpu.{rank}.temp/l:{label}": 60.0 + rank,
                             "_wandb": True, "_timestamp": 1700000000.0 + offset})
        if structured:
            out = [json.dumps({"ts": "2024-05-01T12:00:00.000000", "label": label,
                               "content": f"{label} line {offset + i}"}) for i in range(n)]
            out[-1] = json.dumps({"level": "error", "ts": "2024-05-01T12:00:00.5", "label": label,
                                  "content": f"{label} line {offset + n - 1}"})
        else:
            out = [f"2024-05-01T12:00:00.000000 [{label}] {label} line {offset + i}"
                   for i in range(n)]
        body = {"files": {
            # Newer clients leave steps to the server in shared mode: no _step.
            "wandb-history.jsonl": {"offset": offset, "content": [
                json.dumps({"loss": rank * 1000 + offset + i, "_timestamp": 1700000000.0 + i})
                for i in range(n)]},
            "wandb-events.jsonl": {"offset": offset // n, "content": [events]},
            "output.log": {"offset": offset, "content": out}}}
        status, _ = clients[rank].file_stream(entity, "proj", "shr", body)
        assert status == 200

    send(0, 0, 5)
    send(1, 0, 5, structured=True)
    send(0, 5, 5)
    clients[2].upsert("shr")  # joins late
    send(2, 0, 5)
    send(1, 5, 5, structured=True)
    send(2, 5, 5)
    send(2, 5, 5)  # retried

    ws = writers(api, entity, "shr")
    assert sorted(ws) == ["rank_0", "rank_1", "rank_2"]
    assert ws["rank_0"]["primary"] and not ws["rank_1"]["primary"]
    assert not ws["rank_2"]["primary"] and not ws["rank_2"]["update_finish_state"]
    loss = points(api, entity, "shr", "loss")
    for rank in range(3):
        pts = loss[f"rank_{rank}"]
        assert [p[0] for p in pts] == list(range(10)), rank  # server-assigned, per writer
        assert [p[2] for p in pts] == [rank * 1000 + i for i in range(10)]
        status, system = api.get(f"/api/v1/runs/{entity}/proj/shr/system?labels=rank_{rank}")
        keys = {(s["key"], s["writer"]) for s in system["series"]}
        assert keys == {("cpu", f"rank_{rank}"), (f"gpu.{rank}.temp", f"rank_{rank}")}
        lines = console(api, entity, "shr", labels=f"rank_{rank}")
        assert [l["text"] for l in lines] == [f"rank_{rank} line {i}" for i in range(10)]
    assert [l["stream"] for l in console(api, entity, "shr", labels="rank_1")].count("stderr") == 2

    # Workers never send complete; the primary ends the run.
    assert get_run(api, entity, "shr")["state"] == "running"
    status, _ = clients[0].file_stream(entity, "proj", "shr", {
        "files": {"wandb-summary.json": {"offset": 0, "content": [json.dumps({"loss": 9})]}},
        "complete": True, "exitcode": 0})
    assert status == 200
    clients[1].file_stream(entity, "proj", "shr", {
        "files": {"wandb-summary.json": {"offset": 0, "content": [json.dumps({"loss": 1009})]}},
        "uploaded": ["output_rank_1.log"]})
    run = get_run(api, entity, "shr")
    assert run["state"] == "finished" and run["exit_code"] == 0
    assert run["summary"] == {"loss": 9}  # a worker's summary does not overwrite the primary's
    ws = writers(api, entity, "shr")
    assert ws["rank_0"]["state"] == "finished"
    assert ws["rank_1"]["state"] == "finished"  # uploaded its console log at exit
    assert ws["rank_2"]["state"] == "running"
    assert get_run(api, entity, "shr")["config"] == {"lr": 0.1}


def test_second_writer_after_1000_rows_overwrites_nothing(server, api, entity):
    first = shared_client(server, "aaaaaaaa00000000000000000000000a")
    first.upsert("big")
    for start in range(0, 1000, 250):
        body = {"files": {"wandb-history.jsonl": {"offset": start, "content": [
            history_line(i, loss=float(i)) for i in range(start, start + 250)]},
            "wandb-events.jsonl": {"offset": start // 250, "content": [json.dumps(
                {"system.cpu/l:rank_0": 1.0, "_timestamp": 1700000000.0 + start})]}}}
        assert first.file_stream(entity, "proj", "big", body)[0] == 200
    second = shared_client(server, "bbbbbbbb00000000000000000000000b")
    bucket = second.upsert("big")["bucket"]
    assert bucket["historyLineCount"] == 0  # its own offsets start at 0
    body = {"files": {"wandb-history.jsonl": {"offset": 0, "content": [
        history_line(i, loss=-float(i)) for i in range(100)]},
        "output.log": {"offset": 0, "content": ["2024-05-01T12:00:00 [rank_1] attached"]}}}
    assert second.file_stream(entity, "proj", "big", body)[0] == 200
    loss = points(api, entity, "big", "loss")
    assert sorted(loss) == ["rank_0", "rank_1"]
    assert [(p[0], p[2]) for p in loss["rank_0"]] == [(i, float(i)) for i in range(1000)]
    assert [(p[0], p[2]) for p in loss["rank_1"]] == [(i, -float(i)) for i in range(100)]


def test_concurrent_retries_store_once(server, api, entity):
    client = shared_client(server, "cccccccc00000000000000000000000c")
    client.upsert("race")
    body = {"files": {"wandb-history.jsonl": {"offset": 0, "content": [
        history_line(i, x=float(i)) for i in range(50)]},
        "wandb-events.jsonl": {"offset": 0, "content": [json.dumps({"system.cpu/l:w": 1.0})]}}}
    statuses = []

    def go():
        statuses.append(client.file_stream(entity, "proj", "race", body)[0])

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(statuses) <= {200, 429}, statuses  # 429: back off and retry, never fatal
    while 429 in statuses:
        statuses = [client.file_stream(entity, "proj", "race", body)[0]]
    (label, pts), = points(api, entity, "race", "x").items()
    assert label == "w"
    assert [p[0] for p in pts] == list(range(50))


def test_label_found_late_renames_the_writer(server, api, entity):
    client = shared_client(server, "dddddddd00000000000000000000000d")
    client.upsert("late")
    client.file_stream(entity, "proj", "late", {"files": {"wandb-history.jsonl": {
        "offset": 0, "content": [history_line(i, y=1.0) for i in range(3)]}}})
    assert list(writers(api, entity, "late")) == ["client-0000000d"]
    client.file_stream(entity, "proj", "late", {"files": {"output.log": {
        "offset": 0, "content": ["2024-05-01T12:00:00 [rank_4] hi"]}}})
    assert list(writers(api, entity, "late")) == ["rank_4"]
    assert [p[0] for p in points(api, entity, "late", "y")["rank_4"]] == [0, 1, 2]


def test_file_stream_is_never_fatal_for_recoverable_input(wire, api, entity):
    # A run nobody upserted (or that was deleted under a running client) is created.
    status, body = wire.file_stream(entity, "proj", "ghost", {"files": {
        "wandb-history.jsonl": {"offset": 0, "content": [
            "not json", history_line(1, ok=1.0), '{"media": {"_type": "image-file"}}']},
        "some-other-file.txt": {"offset": 0, "content": ["x"]}}})
    assert status == 200
    assert body["skipped"] == 2
    assert get_run(api, entity, "ghost")["state"] == "running"
    # Conditions no retry can fix are refused.
    assert wire.file_stream("someone-else", "proj", "ghost", {})[0] == 404
    assert wire._request("POST", f"/files/{entity}/proj/ghost/file_stream",
                         raw=b"{not json")[0] == 400
    bad_key = type(wire)(wire.url, "ck_" + "0" * 40)
    assert bad_key.file_stream(entity, "proj", "ghost", {})[0] == 401


def test_summary_of_a_client_that_died_follows_its_last_stored_point(tmp_path):
    """A stock client sent its summary at step 24 and history up to step 99, then died (no
    `complete`, no more requests). Once its heartbeats stop, the server ends the writer as
    crashed and the run's summary shows the last stored loss, not the step-24 value that was
    last sent; a key the client set to something else than its series holds stays as set."""
    from conftest import ServerProcess, wait_for
    from .compat_helpers import WandbWire

    s = ServerProcess(tmp_path, ["--heartbeat-timeout", "2", "--sweep-interval", "1"]).start()
    try:
        api = s.api()
        entity = api.get("/api/v1/viewer")[1]["entity"]
        wire = WandbWire(s.url, s.config["api_key"])
        wire.upsert("dies")
        loss = [10.0 / (i + 1) for i in range(100)]
        first = {"files": {
            "wandb-history.jsonl": {"offset": 0, "content": [history_line(i, loss=loss[i], acc=i / 100) for i in range(25)]},
            "wandb-summary.json": {"offset": 0, "content": [json.dumps({"loss": loss[24], "acc": 0.24, "best": 0.5})]}}}
        assert wire.file_stream(entity, "proj", "dies", first)[0] == 200
        rest = {"files": {"wandb-history.jsonl": {
            "offset": 25, "content": [history_line(i, loss=loss[i], acc=i / 100) for i in range(25, 100)]}}}
        assert wire.file_stream(entity, "proj", "dies", rest)[0] == 200
        assert get_run(api, entity, "dies")["summary"]["loss"] == loss[24]  # what it sent, so far
        run = wait_for(lambda: (r := get_run(api, entity, "dies"))["state"] == "crashed" and r, timeout=20)
        assert run, "the writer was never marked crashed"
        assert run["summary"]["loss"] == loss[99]
        assert run["summary"]["acc"] == 0.99
        assert run["summary"]["best"] == 0.5
    finally:
        s.stop()


def test_a_writer_that_comes_back_after_failing_resolves_its_alert(wire, api, entity):
    """A vendor client whose run failed and that streams again (a resumed run) is joined again,
    and what its earlier process left open (the writer_state alert of the failure) is resolved,
    as when Cohort's own client joins again (docs/compat.md, "Alerts")."""
    wire.upsert("comeback", project="backproj")
    wire.file_stream(entity, "backproj", "comeback", {"files": {"wandb-history.jsonl": {
        "offset": 0, "content": [history_line(i, acc=i) for i in range(2)]}},
        "complete": True, "exitcode": 2})

    def alerts():
        status, body = api.get(f"/api/v1/alerts/{entity}/backproj?run=comeback")
        assert status == 200, body
        return [a for a in body["alerts"] if a["source"] == "rule"]

    (failed,) = alerts()
    assert failed["state"] == "open" and "failed" in failed["title"], failed

    wire.file_stream(entity, "backproj", "comeback", {"files": {"wandb-history.jsonl": {
        "offset": 2, "content": [history_line(i, acc=i) for i in range(2, 4)]}}})
    (w,) = writers(api, entity, "comeback", project="backproj").values()
    assert w["state"] == "running"
    (after,) = alerts()
    assert after["id"] == failed["id"] and after["state"] == "resolved", after


HIST = {"_type": "histogram", "values": [1, 2], "bins": [0.0, 1.0, 2.0]}


def histogram_steps(api, entity, run, key, project="proj"):
    status, body = api.get(f"/api/v1/runs/{entity}/{project}/{run}/histograms?keys={key}")
    assert status == 200, body
    return {s["writer"]: [p["step"] for p in s["steps"]] for s in body["histograms"]}


def test_a_value_the_run_cannot_take_is_dropped_not_its_request(wire, api, entity):
    # A key logged as a scalar and then as a histogram: in one request, then in a later one
    # (the run has it as a scalar by then). Only those values are dropped, and counted; the
    # request's other values and its console line are stored. (The whole request was dropped,
    # answered 200 without a word, and its lines were never sent again.)
    first = json.loads(history_line(0, acc=0.5, loss=1.0))
    second = json.loads(history_line(1, loss=0.9))
    second["acc"] = HIST
    status, body = wire.file_stream(entity, "proj", "clash", {"files": {
        "wandb-history.jsonl": {"offset": 0, "content": [json.dumps(first), json.dumps(second)]},
        "output.log": {"offset": 0, "content": ["2024-05-01T12:00:00.000000 hello"]}}})
    assert status == 200 and body.get("skipped") == 1, body
    third = json.loads(history_line(2, loss=0.8))
    third["acc"] = HIST
    third["grad"] = HIST
    status, body = wire.file_stream(entity, "proj", "clash", {"files": {
        "wandb-history.jsonl": {"offset": 2, "content": [json.dumps(third)]}}})
    assert status == 200 and body.get("skipped") == 1, body
    loss = next(iter(points(api, entity, "clash", "loss").values()))
    assert [p[0] for p in loss] == [0, 1, 2]
    acc = next(iter(points(api, entity, "clash", "acc").values()))
    assert [p[0] for p in acc] == [0]
    assert list(histogram_steps(api, entity, "clash", "grad").values()) == [[2]]
    assert [line["text"] for line in console(api, entity, "clash")] == ["hello"]


def test_shared_mode_histograms_without_a_step_take_their_lines_step(server, api, entity):
    # Shared-mode clients leave steps to the server: a histogram in such a line was dropped
    # without a word (it needs a step); it now has its line's step, like the line's scalars.
    client = shared_client(server, "01a22e0b687e7c768488d3f89097aaaa")
    client.upsert("shrh")
    lines = []
    for i in range(3):
        line = json.loads(history_line(None, x=float(i)))
        if i > 0:
            line["h"] = HIST
        lines.append(json.dumps(line))
    status, body = client.file_stream(entity, "proj", "shrh", {"files": {
        "wandb-history.jsonl": {"offset": 0, "content": lines}}})
    assert status == 200 and "skipped" not in body, body
    x = points(api, entity, "shrh", "x")
    (label, xs), = x.items()
    assert [p[0] for p in xs] == [0, 1, 2]
    assert histogram_steps(api, entity, "shrh", "h") == {label: [1, 2]}
    # The next request goes on from there.
    line = json.loads(history_line(None, x=3.0))
    line["h"] = HIST
    status, body = client.file_stream(entity, "proj", "shrh", {"files": {
        "wandb-history.jsonl": {"offset": 3, "content": [json.dumps(line)]}}})
    assert status == 200, body
    assert [p[0] for p in points(api, entity, "shrh", "x")[label]] == [0, 1, 2, 3]
    assert histogram_steps(api, entity, "shrh", "h") == {label: [1, 2, 3]}


def test_a_summary_over_its_limit_is_skipped_not_a_500(wire, api, entity):
    # A summary the run cannot take was answered 500, which the clients retry for ever with the
    # same lines: the stream stopped there.
    wire.upsert("bigsum", project="proj", entity=entity)
    huge = json.dumps({"blob": "x" * (2 << 20)})
    status, body = wire.file_stream(entity, "proj", "bigsum", {"files": {
        "wandb-history.jsonl": {"offset": 0, "content": [history_line(0, loss=1.0)]},
        "wandb-summary.json": {"offset": 0, "content": [huge]}}})
    assert status == 200 and body.get("skipped") == 1, body
    status, body = wire.file_stream(entity, "proj", "bigsum", {"files": {
        "wandb-history.jsonl": {"offset": 1, "content": [history_line(1, loss=0.5)]}}})
    assert status == 200, body
    assert [p[0] for p in next(iter(points(api, entity, "bigsum", "loss").values()))] == [0, 1]


def test_values_past_the_runs_key_limit_are_skipped_not_a_500(tmp_path):
    # Past the tier's keys_per_run the store refuses the batch (413 on the native route): the
    # file_stream answered 500, retried for ever with the same lines. Now the values of the new
    # keys are skipped and counted, the others stored.
    from conftest import ServerProcess
    from .compat_helpers import WandbWire
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"default_tier": "small", "tiers": {"small": {"keys_per_run": 3}}}))
    server = ServerProcess(tmp_path, extra_args=["--limits", str(limits)]).start()
    try:
        api = server.api()
        entity = api.get("/api/v1/viewer")[1]["entity"]
        wire = WandbWire(server.url, server.config["api_key"])
        wire.upsert("keys", project="proj", entity=entity)
        status, body = wire.file_stream(entity, "proj", "keys", {"files": {
            "wandb-history.jsonl": {"offset": 0, "content": [history_line(0, a=1.0, b=2.0)]}}})
        assert status == 200 and "skipped" not in body, body
        status, body = wire.file_stream(entity, "proj", "keys", {"files": {
            "wandb-history.jsonl": {"offset": 1, "content": [
                history_line(1, a=1.5, c=3.0, d=4.0), history_line(2, b=2.5)]}}})
        assert status == 200 and body.get("skipped") == 2, body
        assert [p[0] for p in next(iter(points(api, entity, "keys", "a").values()))] == [0, 1]
        assert [p[0] for p in next(iter(points(api, entity, "keys", "b").values()))] == [0, 2]
        assert points(api, entity, "keys", "c") == {}
    finally:
        server.stop()
