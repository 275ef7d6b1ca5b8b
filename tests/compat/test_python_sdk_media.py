"""The vendor's Python SDK logging media into Cohort (issue 15): `wandb.Image`, `wandb.Audio`,
`wandb.Html` and `wandb.Table` values, unchanged clients pointed at the server; their history
values become media rows and the files they upload become the blobs they name (the run files of
those names are served from the blobs: one copy), checked through Cohort's own routes (.../keys
types, .../media rows, the download, the run file, the table) and on disk."""
import hashlib
import io
import sqlite3
import urllib.parse
import urllib.request

import numpy as np
import pytest

from .compat_helpers import run_python, sdk_env

pytestmark = pytest.mark.timeout(600)
PIL = pytest.importorskip("PIL.Image")

SCRIPT = r'''
import sys, wave
import numpy as np
import wandb
run_id, project = sys.argv[1], sys.argv[2]
with wave.open("clip.wav", "wb") as w:   # raw arrays need soundfile in the vendor's SDK
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(8000)
    w.writeframes(bytes(1600))
run = wandb.init(project=project, id=run_id)
for step in range(2):
    px = np.full((6, 4, 3), 60 * step + 5, dtype=np.uint8)
    run.log({"loss": 1.0 / (step + 1), "img": wandb.Image(px, caption=f"s{step}"),
             "tab": wandb.Table(columns=["a", "b"], data=[[step, "x"], [step + 1, "y"]]),
             "clip": wandb.Audio("clip.wav"),
             "page": wandb.Html("<p>step</p>")})
run.finish()
'''


def test_wandb_media_values_are_stored_as_media(server, api, entity, tmp_path):
    env = sdk_env(server, tmp_path)
    proc = run_python(SCRIPT, env, tmp_path, args=("media01", "sdkmedia"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    base = f"/api/v1/runs/{entity}/sdkmedia/media01"
    status, keys = api.get(base + "/keys")
    assert status == 200, keys
    types = {k["key"]: k["type"] for k in keys["keys"]}
    assert types["loss"] == "scalar" and types["img"] == "image" and types["tab"] == "table", types
    assert types["clip"] == "audio" and types["page"] == "html", types
    status, body = api.get(base + "/media?keys=img")
    assert status == 200, body
    rows = body["media"]
    assert [r["step"] for r in rows] == [0, 1] and rows[1]["caption"] == "s1", rows
    assert all(r["uploaded"] for r in rows), rows  # the client uploaded its files at finish
    for r in rows:
        req = urllib.request.Request(server.url + r["url"])
        req.add_header("Authorization", "Bearer " + server.config["api_key"])
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = resp.read()
            assert resp.headers["Content-Type"] == "image/png"
        assert hashlib.sha256(data).hexdigest() == r["sha256"]
        with PIL.open(io.BytesIO(data)) as im:
            assert np.array_equal(np.asarray(im)[..., :3],
                                  np.full((6, 4, 3), 60 * r["step"] + 5, dtype=np.uint8))
    status, table = api.get(base + "/tables/tab")
    assert status == 200, table
    assert table["step"] == 1 and table["columns"] == ["a", "b"], table
    assert table["data"] == [[1, "x"], [2, "y"]], table

    # One copy of each media file on disk: the blob; the run file of its name keeps none and
    # answers the blob's bytes.
    status, body = api.get(base + "/media")
    assert status == 200, body
    media = {r["sha256"]: r for r in body["media"]}
    status, listing = api.get(base + "/files")
    assert status == 200, listing
    files = [f for f in listing["files"] if f["name"].startswith("media/")]
    assert files and len(files) <= len(body["media"]), (files, body["media"])
    blobs = {p.name: p.stat().st_size for p in (server.data_dir / "blobs").rglob("*")
             if p.is_file() and len(p.name) == 64}
    db = sqlite3.connect(f"file:{server.data_dir / 'cohort.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT f.name, f.size, length(f.data), f.sha256 FROM run_files f "
                          "JOIN runs r ON r.pk = f.run_pk WHERE r.run_id = 'media01' AND "
                          "f.name LIKE 'media/%' ORDER BY f.name").fetchall()
    finally:
        db.close()
    assert len(rows) == len(files), rows
    for name, size, inline, sha in rows:
        assert inline == 0 and sha in media and media[sha]["size"] == size, (name, size, inline)
        assert blobs[sha] == size, (name, blobs)
        path = urllib.parse.urlsplit(next(f["url"] for f in files if f["name"] == name)).path
        req = urllib.request.Request(server.url + path)
        req.add_header("Authorization", "Bearer " + server.config["api_key"])
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert hashlib.sha256(resp.read()).hexdigest() == sha, name
    # Each media file is one file in the data directory (its blob), whatever else the vendor's
    # client uploaded (a table is also logged as an artifact).
    copies = [p.name for p in server.data_dir.rglob("*") if p.is_file() and p.name in media]
    assert sorted(copies) == sorted(media), (copies, media)


LIST_SCRIPT = r'''
import sys
import numpy as np
import wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id)
for step in range(2):
    images = [wandb.Image(np.full((5, 3, 3), 40 * step + 10 * i, dtype=np.uint8),
                          caption=f"s{step} i{i}") for i in range(3)]
    run.log({"examples": images, "loss": 0.5})
run.finish()
'''


def test_a_list_of_images_is_one_steps_set(server, api, entity, tmp_path):
    """`run.log({"examples": [wandb.Image, ...]})` sends `images/separated` with the files' paths
    only: each image becomes a media row (index 0..n-1) whose blob is the file the client uploads
    under that path, whichever of the line and the upload comes first."""
    env = sdk_env(server, tmp_path)
    proc = run_python(LIST_SCRIPT, env, tmp_path, args=("media02", "sdkmedia"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    base = f"/api/v1/runs/{entity}/sdkmedia/media02"
    status, keys = api.get(base + "/keys")
    assert status == 200, keys
    assert {k["key"]: k["type"] for k in keys["keys"]}["examples"] == "image", keys
    status, body = api.get(base + "/media?keys=examples")
    assert status == 200, body
    rows = body["media"]
    assert [(r["step"], r["index"]) for r in rows] == [(s, i) for s in range(2) for i in range(3)]
    assert [r["caption"] for r in rows] == [f"s{s} i{i}" for s in range(2) for i in range(3)]
    assert all(r["uploaded"] and r["width"] == 3 and r["height"] == 5 for r in rows), rows
    for r in rows:
        req = urllib.request.Request(server.url + r["url"])
        req.add_header("Authorization", "Bearer " + server.config["api_key"])
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = resp.read()
            assert resp.headers["Content-Type"] == "image/png"
        assert hashlib.sha256(data).hexdigest() == r["sha256"] and r["size"] == len(data)
        with PIL.open(io.BytesIO(data)) as im:
            assert np.array_equal(np.asarray(im)[..., :3],
                                  np.full((5, 3, 3), 40 * r["step"] + 10 * r["index"],
                                          dtype=np.uint8))


TABLE_CELLS_SCRIPT = r'''
import sys
import numpy as np
import wandb
run_id, project = sys.argv[1], sys.argv[2]
run = wandb.init(project=project, id=run_id)
def table(shift):
    return wandb.Table(columns=["i", "img"], data=[
        [i, wandb.Image(np.full((4, 5, 3), 50 * i + 7 + shift, dtype=np.uint8), caption=f"c{i}")]
        for i in range(3)])
first = table(0)
run.log({"preds": first})
run.log({"preds": table(1)})  # other images, the same run file (the cells say "Image")
run.log({"preds": first})     # the first table again: its artifact version
run.finish()
'''


def test_a_wandb_tables_image_cells_are_read_from_its_run_table_artifact(server, api, entity,
                                                                       tmp_path):
    """The vendor's table of images: its history row's run file names each cell's type only
    ("Image"); the cells with their images are in the `run_table` artifact the client logs
    with it (reference/wandb-artifacts-media.md 1.6), named by the line's artifact_path (the
    artifact's client ID). Cohort's table route answers that document, its image cells as media
    cells whose bytes are the artifact's files, byte for byte and pixel for pixel: at each step
    its own images, also when two steps' run files are the same document (one digest) and when
    the same table is logged again (the same artifact version)."""
    env = sdk_env(server, tmp_path)
    proc = run_python(TABLE_CELLS_SCRIPT, env, tmp_path, args=("tcells01", "sdkmedia"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    base = f"/api/v1/runs/{entity}/sdkmedia/tcells01"
    art = f"/api/v1/artifacts/{entity}/sdkmedia/run-tcells01-preds"
    status, version = api.get(art + "/latest")
    assert status == 200, version
    assert version["type"] == "run_table" and version["run"] == "tcells01", version
    status, versions = api.get(art + "/versions")
    assert status == 200, versions
    files = {f["path"]: f for v in versions["versions"] for f in
             api.get(art + "/" + v["version"])[1]["files"]}
    for step, shift in ((0, 0), (1, 1), (2, 0)):
        status, table = api.get(base + f"/tables/preds?step={step}")
        assert status == 200, table
        assert table["columns"] == ["i", "img"] and table["step"] == step, table
        assert [row[0] for row in table["data"]] == [0, 1, 2], table
        for i, (_, cell) in enumerate(table["data"]):
            assert (cell["_type"], cell["mime"], cell["caption"]) == ("image", "image/png",
                                                                      f"c{i}"), cell
            assert (cell["width"], cell["height"], cell["uploaded"]) == (5, 4, True), cell
            assert cell["sha256"] in {f["sha256"] for f in files.values()}, (cell, files)
            req = urllib.request.Request(server.url + cell["url"])
            req.add_header("Authorization", "Bearer " + server.config["api_key"])
            with urllib.request.urlopen(req, timeout=30) as resp:
                data = resp.read()
                assert resp.headers["Content-Type"] == "image/png"
                assert "sandbox" in resp.headers["Content-Security-Policy"]
            assert hashlib.sha256(data).hexdigest() == cell["sha256"], cell
            with PIL.open(io.BytesIO(data)) as im:
                assert np.array_equal(np.asarray(im)[..., :3],
                                      np.full((4, 5, 3), 50 * i + 7 + shift, dtype=np.uint8))
