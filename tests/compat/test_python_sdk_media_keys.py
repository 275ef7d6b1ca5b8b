"""The vendor's Python SDK logging media under keys with '/' and tables with non-finite cells:
the client puts a key's files in subfolders of the media folder (key "val/sample" ->
media/images/val/sample_0_<id>.png) and writes missing table values as bare NaN / Infinity."""
import hashlib
import urllib.request

import numpy as np
import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)
pytest.importorskip("PIL.Image")

SLASH_SCRIPT = r'''
import sys, wave
import numpy as np
import wandb
run_id, project = sys.argv[1], sys.argv[2]
with wave.open("clip.wav", "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(8000)
    w.writeframes(bytes(1600))
run = wandb.init(project=project, id=run_id)
a = np.full((6, 4, 3), 11, dtype=np.uint8)
b = np.full((6, 4, 3), 99, dtype=np.uint8)
run.log({"val/sample": wandb.Image(a), "val/list": [wandb.Image(a), wandb.Image(b)],
         "eval/deep/tab": wandb.Table(columns=["x"], data=[[1], [2]]),
         "audio/clip": wandb.Audio("clip.wav")})
run.finish()
'''


def fetch(server, url):
    req = urllib.request.Request(server.url + url)
    req.add_header("Authorization", "Bearer " + server.config["api_key"])
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def test_media_under_keys_with_slashes_is_viewable(server, api, entity, tmp_path):
    """An image, a list of images, a table and an audio clip logged under keys with '/': each
    becomes its media rows, uploaded, whose URLs answer the client's files."""
    env = sdk_env(server, tmp_path)
    proc = run_python(SLASH_SCRIPT, env, tmp_path, args=("slash01", "sdkmedia"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    base = f"/api/v1/runs/{entity}/sdkmedia/slash01"
    status, body = api.get(base + "/media")
    assert status == 200, body
    rows = body["media"]
    by_key = {}
    for r in rows:
        by_key.setdefault(r["key"], []).append(r)
    assert sorted(by_key) == ["audio/clip", "eval/deep/tab", "val/list", "val/sample"], rows
    assert [r["index"] for r in by_key["val/list"]] == [0, 1], rows
    assert all(r["uploaded"] for r in rows), rows
    for r in rows:
        assert hashlib.sha256(fetch(server, r["url"])).hexdigest() == r["sha256"], r
    status, table = api.get(base + "/tables/eval/deep/tab")
    assert status == 200, table
    assert table["columns"] == ["x"] and table["data"] == [[1], [2]], table


NAN_TABLE_SCRIPT = r'''
import sys
import wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id)
run.log({"tbl": wandb.Table(columns=["a", "b"],
                            data=[[1.0, float("nan")], [float("inf"), -float("inf")]])})
run.finish()
'''


def test_a_table_with_non_finite_cells_is_readable(server, api, entity, tmp_path):
    """The client writes a table's infinities as bare Infinity / -Infinity (not JSON; its NaN
    becomes null in the table document): the table answers them as the strings the API writes
    non-finite numbers as (docs/api.md)."""
    env = sdk_env(server, tmp_path)
    proc = run_python(NAN_TABLE_SCRIPT, env, tmp_path, args=("nantab01", "sdkmedia"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status, table = api.get(f"/api/v1/runs/{entity}/sdkmedia/nantab01/tables/tbl")
    assert status == 200, table
    assert table["columns"] == ["a", "b"], table
    assert table["data"] == [[1.0, None], ["Infinity", "-Infinity"]], table
