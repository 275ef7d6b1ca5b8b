"""The run's media budget (`--max-run-media-bytes`) on the vendor's upload route, over HTTP: a
list of images (`images/separated`) names its files by path only, so its rows enter with no
size, and the budget is checked when each file arrives. The upload that would take the run past
the budget is answered 413 naming the flag; its image keeps no blob (listed as not uploaded),
the file itself stays a run file; what was within the budget is attached and readable."""
import json

import pytest

from conftest import ServerProcess
from .compat_helpers import CREATE_RUN_FILES, WandbWire, history_line

pytestmark = pytest.mark.timeout(120)

BUDGET = 100


@pytest.fixture
def budget_server(tmp_path):
    s = ServerProcess(tmp_path, extra_args=["--max-run-media-bytes", str(BUDGET)]).start()
    yield s
    s.stop()


def upserted(server, run):
    """(API client, entity, vendor wire client) with `run` upserted in project "proj"."""
    api = server.api()
    status, viewer = api.get("/api/v1/viewer")
    assert status == 200
    wire = WandbWire(server.url, server.config["api_key"])
    wire.upsert(run, project="proj", entity=viewer["entity"])
    return api, viewer["entity"], wire


def test_upload_past_the_runs_media_budget_is_413_and_attaches_nothing(budget_server):
    api, entity, wire = upserted(budget_server, "budget1")

    names = ["media/images/ex_0_0.png", "media/images/ex_0_1.png"]
    line = json.loads(history_line(0, loss=0.5))
    line["ex"] = {"_type": "images/separated", "count": 2, "filenames": names,
                  "width": 3, "height": 5}
    body = {"files": {"wandb-history.jsonl": {"offset": 0, "content": [json.dumps(line)]}}}
    assert wire.file_stream(entity, "proj", "budget1", body)[0] == 200

    status, payload = wire.gql(CREATE_RUN_FILES, {"entity": entity, "project": "proj",
                                                  "run": "budget1", "files": names})
    assert status == 200 and "errors" not in payload, payload
    urls = {f["name"]: f["uploadUrl"] for f in payload["data"]["createRunFiles"]["files"]}
    first = b"\x89PNG\r\n\x1a\n" + b"a" * 52    # 60 bytes: within the budget of 100
    second = b"\x89PNG\r\n\x1a\n" + b"b" * 52   # 60 more: 120 > 100
    assert wire.put(urls[names[0]], first)[0] == 200
    status, answer, _ = wire.put(urls[names[1]], second)
    assert status == 413, answer
    assert "--max-run-media-bytes" in json.dumps(answer), answer

    base = f"/api/v1/runs/{entity}/proj/budget1"
    status, media = api.get(base + "/media?keys=ex")
    assert status == 200, media
    rows = {r["index"]: r for r in media["media"]}
    assert sorted(rows) == [0, 1], media
    assert rows[0]["uploaded"] and rows[0]["size"] == len(first), rows[0]
    assert not rows[1]["uploaded"] and rows[1]["sha256"] == "", rows[1]
    # The refused file is kept as a run file (nothing acknowledged is dropped) ...
    status, listing = api.get(base + "/files")
    assert status == 200
    sizes = {f["name"]: f["size"] for f in listing["files"]}
    assert sizes.get(names[1]) == len(second), sizes
    # ... and the attached image reads back.
    status, data, _ = wire._request("GET", rows[0]["url"],
                                    headers={"Authorization": "Bearer " + api.key}, auth=False)
    assert status == 200 and data == first


def test_media_files_named_in_history_lines_count_against_the_budget(budget_server):
    # A media file value names its blob by digest and size: its row enters with that size, and
    # the run's budget (and the other media limits) applied to the native route only: the
    # vendor's rows were stored whatever their sizes.
    api, entity, wire = upserted(budget_server, "budget2")

    def image_line(step, digit):
        line = json.loads(history_line(step, loss=0.5))
        line["ex"] = {"_type": "image-file", "path": f"media/images/ex_{step}.png",
                      "sha256": digit * 64, "size": 60, "format": "png", "width": 3,
                      "height": 5}
        return json.dumps(line)

    body = {"files": {"wandb-history.jsonl": {"offset": 0, "content": [image_line(0, "a")]}}}
    status, answer = wire.file_stream(entity, "proj", "budget2", body)
    assert status == 200 and "media_refused" not in answer, answer
    body = {"files": {"wandb-history.jsonl": {"offset": 1, "content": [image_line(1, "b")]}}}
    status, answer = wire.file_stream(entity, "proj", "budget2", body)
    assert status == 200 and answer.get("media_refused") == 1, answer
    assert "--max-run-media-bytes" in answer["media_refused_reason"], answer
    status, media = api.get(f"/api/v1/runs/{entity}/proj/budget2/media?keys=ex")
    assert status == 200, media
    assert [r["step"] for r in media["media"]] == [0], media
    # The line's other values are stored.
    status, hist = api.get(f"/api/v1/runs/{entity}/proj/budget2/history?keys=loss")
    assert status == 200 and [p[0] for p in hist["series"][0]["points"]] == [0, 1], hist
