"""Media end to end (issue 15): cohort.Image (numpy HWC/CHW, float and uint8, torch tensors, PIL
images, files), Audio, Video, Html and Table logged with scalars in one call by real training
processes, through the real agent (media intents: the blobs to the server's blob store; the rows
in batch v4) and server (SQLite store); read back through the routes (.../keys with types,
.../media rows, the sandboxed download, .../tables paging) and cohort.Api (Run.media with
download, Run.table); bad input raising at the call, one type per key (in the writer and across
writers); two real torch.distributed gloo ranks in shared mode, each under its label."""
import hashlib
import io
import json
import urllib.error
import urllib.request

import numpy as np
import pytest

from dist_helpers import EXAMPLES, assert_ok, client, wait_until  # noqa: F401

PIL = pytest.importorskip("PIL.Image", reason="cohort.Image encodes arrays with Pillow")

LOG_SCRIPT = r"""
import json, math, os, wave
import numpy as np
import torch
from PIL import Image as PILImage
import cohort
run = cohort.init(project="media")
rng = np.random.default_rng(3)
hwc = rng.integers(0, 256, size=(8, 6, 3), dtype=np.uint8)
chw = torch.tensor(rng.random((4, 5, 7)), dtype=torch.float32)   # RGBA, CHW, float in [0, 1]
grey = rng.integers(0, 256, size=(5, 9), dtype=np.uint8)
pil = PILImage.fromarray(rng.integers(0, 256, size=(3, 4, 3), dtype=np.uint8))
np.save("hwc.npy", hwc); np.save("chw.npy", chw.numpy()); np.save("grey.npy", grey)
pil.save("pil.png")
frames = [PILImage.fromarray(np.full((4, 4, 3), 40 * i, dtype=np.uint8)) for i in range(3)]
frames[0].save("clip.gif", save_all=True, append_images=frames[1:], duration=100)
sine = np.sin(np.linspace(0, 200 * math.pi, 8000)).astype(np.float32) * 0.5
np.save("sine.npy", sine)
for step in range(3):
    run.log({"loss": 1.0 / (step + 1),
             "samples": [cohort.Image(hwc, caption=f"hwc {step}"), cohort.Image(chw),
                         cohort.Image(grey), cohort.Image(pil), cohort.Image("pil.png")],
             "eval/preds": cohort.Table(columns=["id", "label", "p", "ok", "note"],
                                        data=[[i, f"c{i % 3}", i / 10, i % 2 == 0,
                                               None if i else "first"]
                                              for i in range(step + 2)]),
             "clip": cohort.Audio(sine, sample_rate=8000, caption="sine"),
             "video": cohort.Video("clip.gif"),
             "page": cohort.Html(f"<h1>step {step}</h1><script>alert(1)</script>")})
# Bad input: each raises at the call, naming the problem (and the key where the log call sees
# it), and logs nothing of the call.
errors = []
def attempt(fn):
    try:
        fn()
    except Exception as e:
        errors.append(type(e).__name__ + ": " + str(e))
attempt(lambda: run.log({"x": 1.0, "bad": cohort.Image(np.zeros((2, 2, 7)))}))
attempt(lambda: run.log({"x": 1.0, "bad": cohort.Image(np.full((2, 2), 300.0))}))
attempt(lambda: run.log({"x": 1.0, "samples": cohort.Audio(sine, sample_rate=8000)}))
attempt(lambda: run.log({"x": 1.0, "samples": 0.5}))
attempt(lambda: run.log({"x": 1.0, "loss": cohort.Image(hwc)}))
attempt(lambda: run.log({"x": 1.0, "mixed": [cohort.Image(hwc), cohort.Html("<p>")]}))
attempt(lambda: cohort.Table(columns=["a", "b"], data=[[1, 2], [3]]))
attempt(lambda: cohort.Audio(sine))
attempt(lambda: cohort.Video(np.zeros((2, 4, 4, 3))))
attempt(lambda: cohort.Image("clip.gif.txt"))
print("ERRORS", json.dumps(errors))
# Media logged at a step below the current one are dropped with their call, and counted.
import warnings
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    run.log({"late": cohort.Image(hwc)}, step=1)
    run.log({"late": [cohort.Image(hwc), cohort.Image(grey)]}, step=2)
print("DROPPED", run.dropped)
print("RUN", run.id)
run.finish()
"""


def _run_id(proc):
    return next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RUN "))


def _import_cohort():
    import os
    import sys
    from conftest import BUILD, ROOT
    os.environ.setdefault("COHORT_BUILD_DIR", str(BUILD))
    if str(ROOT / "python") not in sys.path:
        sys.path.insert(0, str(ROOT / "python"))
    import cohort
    return cohort


def _download(client, url):
    """(status, headers, bytes) of a GET with the test's key."""
    req = urllib.request.Request(client.server.url + url)
    req.add_header("Authorization", "Bearer " + client.server.config["api_key"])
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def _rows(client, view, **query):
    return client.get(view.path + "/media", **query)["media"]


def _all_uploaded(client, view):
    rows = _rows(client, view)
    return bool(rows) and all(r["uploaded"] for r in rows)


def _pixels(data):
    with PIL.open(io.BytesIO(data)) as im:
        return np.asarray(im)


@pytest.mark.parametrize("encoders", ["1", "3"])
def test_media_logged_with_scalars_are_stored_and_read_back(client, encoders):
    # One encoder (the worker encodes each item when it comes to it) and three (encoded ahead on
    # a pool, python/cohort/_media_encode.py): the same rows, in the same order, byte for byte.
    proc = assert_ok(client.python(LOG_SCRIPT, env={"COHORT_MEDIA_ENCODERS": encoders}))
    errors = json.loads(next(line[7:] for line in proc.stdout.splitlines()
                             if line.startswith("ERRORS ")))
    assert len(errors) == 10, errors
    dropped = next(line.split()[1] for line in proc.stdout.splitlines()
                   if line.startswith("DROPPED "))
    assert dropped == "3", proc.stdout  # 0 before: media below the current step went uncounted
    assert errors[0].startswith("ValueError: Image: expected HW, HWC or CHW"), errors
    assert "float pixels must be in [0, 1] (scaled by 255) or [0, 255], got 300..300" in errors[1], \
        errors
    assert "'samples'" in errors[2] and "image" in errors[2] and "audio" in errors[2], errors
    assert "'samples'" in errors[3] and "image" in errors[3] and "scalar" in errors[3], errors
    assert "'loss'" in errors[4] and "scalar" in errors[4] and "image" in errors[4], errors
    assert "'mixed'" in errors[5] and "one type" in errors[5], errors
    assert "row 1 has 1 cells, expected 2" in errors[6], errors
    assert "sample_rate" in errors[7], errors
    assert "write them to a .mp4 or .gif file" in errors[8], errors
    assert "is not a file" in errors[9], errors
    run_id = _run_id(proc)
    view = client.run_view(run_id, project="media")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    wait_until(lambda: _all_uploaded(client, view), what="every media blob uploaded")

    keys = {(k["key"], k["type"]): k for k in client.get(view.path + "/keys")["keys"]}
    assert {("loss", "scalar"), ("samples", "image"), ("eval/preds", "table"), ("clip", "audio"),
            ("video", "video"), ("page", "html")} <= set(keys), keys
    assert not any(k == "x" or k == "bad" or k == "mixed" for k, _ in keys), keys  # nothing
    assert keys[("samples", "image")]["count"] == 15
    assert (keys[("samples", "image")]["min_step"], keys[("samples", "image")]["max_step"]) == (0, 2)
    # The scalars of the same calls are at the same steps.
    loss_steps = [s for series in view.history(keys=["loss"]).values() for s, _ in series]
    assert loss_steps == [0, 1, 2]

    rows = _rows(client, view, keys="samples", min_step=1, max_step=1)
    assert [(r["step"], r["index"]) for r in rows] == [(1, i) for i in range(5)]
    assert rows[0]["caption"] == "hwc 1" and rows[0]["mime"] == "image/png"
    assert (rows[0]["width"], rows[0]["height"]) == (6, 8)
    assert (rows[1]["width"], rows[1]["height"]) == (7, 5)
    tmp = client.tmp
    want = [np.load(tmp / "hwc.npy"),
            np.rint(np.load(tmp / "chw.npy").astype(np.float64).transpose(1, 2, 0) * 255
                    ).astype(np.uint8),
            np.load(tmp / "grey.npy"),
            _pixels((tmp / "pil.png").read_bytes()),
            None]
    for row, pixels in zip(rows, want):
        status, headers, data = _download(client, row["url"])
        assert status == 200, data
        assert hashlib.sha256(data).hexdigest() == row["sha256"] and len(data) == row["size"]
        assert headers["Content-Type"] == "image/png"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert "sandbox" in headers["Content-Security-Policy"]
        if pixels is not None:
            assert np.array_equal(_pixels(data), pixels), row
    # A file is logged as it is: byte for byte, and equal to the same image encoded from PIL.
    assert _download(client, rows[4]["url"])[2] == (tmp / "pil.png").read_bytes()

    (video,) = _rows(client, view, keys="video", max_step=0)
    status, headers, data = _download(client, video["url"])
    assert data == (tmp / "clip.gif").read_bytes() and headers["Content-Type"] == "image/gif"
    (clip,) = _rows(client, view, keys="clip", max_step=0)
    assert clip["duration_ms"] == 1000 and clip["mime"] == "audio/wav" and clip["caption"] == "sine"
    import wave
    with wave.open(io.BytesIO(_download(client, clip["url"])[2])) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (8000, 1, 2)
        got = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    assert np.array_equal(got, np.rint(np.load(tmp / "sine.npy") * 32767).astype("<i2"))
    (page,) = _rows(client, view, keys="page", min_step=2)
    status, headers, data = _download(client, page["url"])
    assert data == b"<h1>step 2</h1><script>alert(1)</script>"
    assert headers["Content-Type"] == "text/html"  # served sandboxed: the script never runs
    assert "sandbox" in headers["Content-Security-Policy"]
    status, _, _ = _download(client, view.path + "/media/" + "0" * 64)
    assert status == 404

    # Tables: the latest step by default, paged.
    body = client.get(view.path + "/tables/eval/preds")
    assert body["step"] == 2 and body["nrows"] == 4 and body["ncols"] == 5
    assert body["columns"] == ["id", "label", "p", "ok", "note"]
    assert body["data"][0] == [0, "c0", 0, True, "first"]
    page = client.get(view.path + "/tables/eval/preds", step=1, offset=1, limit=1)
    assert page["data"] == [[1, "c1", 0.1, False, None]] and page["nrows"] == 3
    status, body = client.api.get(view.path + "/tables/samples")
    assert status == 400 and "not a table" in json.dumps(body)

    # cohort.Api: Run.media rows with download, Run.table as a DataFrame.
    cohort = _import_cohort()
    api = cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])
    run = api.run(f"{client.entity}/media/{run_id}")
    media = run.media("samples")
    assert len(media) == 15 and {m["type"] for m in media} == {"image"}
    paths = media.download(str(tmp / "dl"))
    assert len(paths) == 15
    first = tmp / "dl" / "samples" / media[0]["writer"] / "0_0.png"
    assert first.read_bytes() == _download(client, media[0]["url"])[2]
    assert np.array_equal(_pixels(first.read_bytes()), want[0])
    df = run.table("eval/preds")
    assert list(df.columns) == ["id", "label", "p", "ok", "note"] and len(df) == 4
    assert list(df["label"]) == ["c0", "c1", "c2", "c0"]
    assert list(run.table("eval/preds", step=0)["id"]) == [0, 1]
    assert {k["type"] for k in run.media_keys()} == {"image", "table", "audio", "video", "html"}

    # The CLI: `cohort media ls` lists the rows, `cohort media get` writes the checked files.
    import subprocess
    cli = [str(client.env["COHORT_BIN"]), "media"]
    ls = subprocess.run(cli + ["ls", f"media/{run_id}", "--key", "samples,eval/preds",
                               "--min-step", "2"], env=client.env, capture_output=True,
                        text=True, timeout=60)
    assert ls.returncode == 0, ls.stderr
    lines = ls.stdout.splitlines()
    assert lines[0].split()[:5] == ["KEY", "WRITER", "STEP", "INDEX", "TYPE"], lines
    assert len(lines) == 1 + 1 + 5, lines  # header, the table, five images of step 2
    assert "4 rows x 5 cols" in ls.stdout and "8x6" not in ls.stdout and "6x8" in ls.stdout
    get = subprocess.run(cli + ["get", f"media/{run_id}", "--key", "samples", "--max-step", "0",
                                "--out", str(tmp / "cli")], env=client.env, capture_output=True,
                         text=True, timeout=60)
    assert get.returncode == 0 and "5 file(s)" in get.stderr, get.stderr
    got = tmp / "cli" / "samples" / media[0]["writer"] / "0_0.png"
    assert got.read_bytes() == first.read_bytes()


CELLS_SCRIPT = r"""
import math
import numpy as np
import cohort
run = cohort.init(project="media")
shared = cohort.Image(np.full((3, 4, 3), 200, dtype=np.uint8), caption="shared")
rows = [[i, cohort.Image(np.full((2 + i, 5, 3), 30 * i, dtype=np.uint8), caption=f"c{i}"), shared]
        for i in range(3)]
sine = (np.sin(np.linspace(0, 20 * math.pi, 800)) * 0.5).astype(np.float32)
rows.append([3, cohort.Audio(sine, sample_rate=8000, caption="tone"), None])
run.log({"loss": 0.5, "preds": cohort.Table(columns=["i", "sample", "ref"], data=rows)})
print("RUN", run.id)
run.finish()
"""


def test_a_tables_media_cells_are_blobs_read_through_the_table(client):
    proc = assert_ok(client.python(CELLS_SCRIPT))
    run_id = _run_id(proc)
    view = client.run_view(run_id, project="media")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    wait_until(lambda: _all_uploaded(client, view), what="the table uploaded")
    # One media row (the table); its cells are not rows of their own.
    (table_row,) = _rows(client, view)
    assert table_row["type"] == "table" and (table_row["ncols"], table_row["nrows"]) == (3, 4)

    def cells_uploaded():
        page = client.get(view.path + "/tables/preds")
        return all(c["uploaded"] for row in page["data"] for c in row[1:] if isinstance(c, dict))
    wait_until(cells_uploaded, what="every media cell uploaded")
    body = client.get(view.path + "/tables/preds")
    assert body["columns"] == ["i", "sample", "ref"] and body["nrows"] == 4
    assert [row[0] for row in body["data"]] == [0, 1, 2, 3] and body["data"][3][2] is None
    shared = {row[2]["sha256"] for row in body["data"][:3]}
    assert len(shared) == 1, body  # one object in three rows: one blob
    # The row carries its cells' bytes (each blob once) for the run's media budget.
    distinct = {c["sha256"]: c["size"] for row in body["data"] for c in row[1:]
                if isinstance(c, dict)}
    assert len(distinct) == 5 and table_row["cell_bytes"] == sum(distinct.values()), table_row
    for i, row in enumerate(body["data"][:3]):
        cell = row[1]
        assert (cell["_type"], cell["mime"], cell["caption"]) == ("image", "image/png", f"c{i}")
        assert (cell["width"], cell["height"]) == (5, 2 + i)
        assert cell["url"] == (f"{view.path}/media/{cell['sha256']}?table={table_row['sha256']}"
                               f"&key=preds&writer={table_row['writer']}&step=0&index=0")
        status, headers, data = _download(client, cell["url"])
        assert status == 200, data
        assert hashlib.sha256(data).hexdigest() == cell["sha256"] and len(data) == cell["size"]
        assert headers["Content-Type"] == "image/png" and "sandbox" in headers[
            "Content-Security-Policy"]
        assert np.array_equal(_pixels(data), np.full((2 + i, 5, 3), 30 * i, dtype=np.uint8))
    tone = body["data"][3][1]
    assert (tone["_type"], tone["mime"], tone["duration_ms"]) == ("audio", "audio/wav", 100)
    status, headers, data = _download(client, tone["url"])
    assert status == 200 and headers["Content-Type"] == "audio/wav" and data[:4] == b"RIFF"

    # A cell's blob is the run's only through its table: without it, through another digest, or
    # with a table that does not hold it, nothing is served.
    cell = body["data"][0][1]
    status, _, _ = _download(client, f"{view.path}/media/{cell['sha256']}")
    assert status == 404
    status, _, data = _download(client, f"{view.path}/media/{cell['sha256']}?table=" + "1" * 64)
    assert status == 404, data
    status, _, data = _download(client, f"{view.path}/media/{'2' * 64}?table={table_row['sha256']}")
    assert status == 404 and b"has no media cell" in data, data
    status, _, data = _download(client, cell["url"].replace("&step=0", "&step=1"))
    assert status == 404 and b"not found in this run" in data, data
    status, _, data = _download(client, f"{view.path}/media/{cell['sha256']}?table=xyz")
    assert status == 400 and b"table" in data, data

    cohort = _import_cohort()
    api = cohort.Api(base_url=client.server.url, api_key=client.server.config["api_key"])
    df = api.run(f"{client.entity}/media/{run_id}").table("preds")
    assert list(df["i"]) == [0, 1, 2, 3]
    assert [c["caption"] for c in df["sample"]] == ["c0", "c1", "c2", "tone"]

    # `cohort gc` keeps the blobs a table's cells reference (no row of their own names them).
    import subprocess
    gc = subprocess.run([str(client.env["COHORT_BIN"]), "gc", "--data-dir",
                         str(client.server.data_dir), "--grace-hours", "0", "--apply"],
                        env=client.env, capture_output=True, text=True, timeout=60)
    assert gc.returncode == 0 and gc.stdout.startswith("removed 0 blob record(s)"), gc.stdout
    for row in body["data"]:
        for cell in row[1:]:
            if isinstance(cell, dict):
                status, _, data = _download(client, cell["url"])
                assert status == 200 and hashlib.sha256(data).hexdigest() == cell["sha256"]


JOB = r"""
import json, os, sys
import numpy as np
import torch
import torch.distributed as dist
import cohort
dist.init_process_group(backend="gloo")
rank = dist.get_rank()
run = cohort.init(project="media", id=os.environ["RUN_ID"], settings=cohort.Settings(
    mode="shared", x_label=f"rank_{rank}", x_primary=rank == 0, x_update_finish_state=rank == 0))
grad = torch.ones(16)
for step in range(3):
    dist.all_reduce(grad)
    pixels = np.full((4, 4, 3), 10 * rank + step, dtype=np.uint8)
    run.log({"loss": float(rank + step),
             "samples": [cohort.Image(pixels), cohort.Image(pixels + 100)],
             "preds": cohort.Table(columns=["rank", "step"], data=[[rank, step]])})
dist.barrier()
run.finish()
# Both ranks leave together and the process group is torn down before the interpreter exits
# (torch 1.13's gloo threads otherwise may abort a rank at exit: "terminate called without an
# active exception", exit -6, when its peer has gone first).
torch.distributed.barrier()
torch.distributed.destroy_process_group()
print("DONE", rank)
"""

INTRUDER = r"""
import os
import numpy as np
import cohort
run = cohort.init(project="media", id=os.environ["RUN_ID"], settings=cohort.Settings(
    mode="shared", x_label="rank_9", x_primary=False))
run.log({"samples": cohort.Audio(np.zeros(80, dtype=np.float32), sample_rate=8000)})
run.finish()
print("DONE intruder")
"""


def test_two_gloo_ranks_in_shared_mode_log_media_under_their_labels(client):
    script = client.tmp / "media_job.py"
    script.write_text(JOB)
    env = {"RUN_ID": "sharedmedia"}
    proc = client.run([EXAMPLES / "launch.py", "--nproc", "2", script], env=env, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    view = client.run_view("sharedmedia", project="media")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    wait_until(lambda: len(_rows(client, view)) == 18 and _all_uploaded(client, view),
               what="both writers' media uploaded")
    for rank in (0, 1):
        label = f"rank_{rank}"
        rows = _rows(client, view, keys="samples", writers=label)
        assert [(r["step"], r["index"]) for r in rows] == [(s, i) for s in range(3)
                                                          for i in range(2)]
        for r in rows:
            want = np.full((4, 4, 3), 10 * rank + r["step"] + 100 * r["index"], dtype=np.uint8)
            assert np.array_equal(_pixels(_download(client, r["url"])[2]), want), r
        table = client.get(view.path + "/tables/preds", writers=label)
        assert table["step"] == 2 and table["data"] == [[rank, 2]] and table["writer"] == label
    # A third writer logs "samples" as audio: the server refuses its batch (400 naming the key
    # and both types); nothing of it is stored, the two ranks' media stay.
    assert_ok(client.python(INTRUDER, env=env))
    wait_until(lambda: "rank_9" in view.writers(), what="the third writer")
    wait_until(lambda: view.writers()["rank_9"]["state"] == "finished", what="rank_9 finished")
    keys = client.get(view.path + "/keys")["keys"]
    assert not [k for k in keys if k["key"] == "samples" and k["type"] != "image"], keys
    assert len(_rows(client, view, keys="samples")) == 12


OFFLINE = r"""
import numpy as np
import cohort
run = cohort.init(project="media", mode="offline")
for step in range(3):
    run.log({"loss": float(step), "img": cohort.Image(np.full((2, 3), 50 * step, dtype=np.uint8)),
             "t": cohort.Table(columns=["s"], data=[[step]])})
run.finish()
print("RUN", run.id)
"""


def test_an_offline_run_keeps_its_media_for_cohort_sync(client):
    import subprocess
    proc = assert_ok(client.python(OFFLINE))
    run_id = _run_id(proc)
    view = client.run_view(run_id, project="media")
    assert view.get()["state"] == "absent"
    client.stop_agents()  # sync takes what no live agent holds
    sync = subprocess.run([str(client.env["COHORT_BIN"]), "sync"], env=client.env,
                          capture_output=True, text=True, timeout=120)
    assert sync.returncode == 0, sync.stderr[-4000:]
    wait_until(lambda: len(_rows(client, view, keys="img")) == 3 and _all_uploaded(client, view),
               what="the synced media")
    for r in _rows(client, view, keys="img"):
        want = np.full((2, 3), 50 * r["step"], dtype=np.uint8)
        assert np.array_equal(_pixels(_download(client, r["url"])[2]), want), r
    assert client.get(view.path + "/tables/t")["data"] == [[2]]


NO_FINISH = r"""
import numpy as np
import cohort
run = cohort.init(project="media")
for step in range(20):
    run.log({"img": [cohort.Image(np.full((2, 2), step, dtype=np.uint8))] * 3})
print("RUN", run.id)
# No finish: the exit path finishes the run, after the worker handed everything over.
"""


@pytest.mark.parametrize("encoders", ["1", "3"])
def test_media_queued_at_exit_are_handed_over_before_the_run_ends(client, encoders):
    # With encoders, the pool takes no more work once the main thread ended: the exit handler's
    # last sets are encoded by the worker itself (they were refused and lost before that).
    proc = assert_ok(client.python(NO_FINISH, env={"COHORT_MEDIA_ENCODERS": encoders}))
    view = client.run_view(_run_id(proc), project="media")
    wait_until(lambda: view.get()["state"] == "finished", what="run finished")
    wait_until(lambda: len(_rows(client, view)) == 60 and _all_uploaded(client, view),
               what="every set logged before the exit")
    rows = _rows(client, view)
    assert [(r["step"], r["index"]) for r in rows] == [(s, i) for s in range(20) for i in range(3)]


BIG_FILES = r"""
import os
import cohort
run = cohort.init(project="media")
with open("big.gif", "wb") as f:
    f.write(b"GIF89a" + os.urandom(3 << 20))
first = open("big.gif", "rb").read()
run.log({"big": cohort.Video("big.gif")})
with open("big.gif", "wb") as f:  # the next clip, written over the file right after the call
    f.write(b"GIF89a" + os.urandom(3 << 20))
run.log({"big": cohort.Video("big.gif")})
second = open("big.gif", "rb").read()
import hashlib
print("SHA", hashlib.sha256(first).hexdigest(), hashlib.sha256(second).hexdigest())
print("RUN", run.id)
if os.environ.get("FINISH") == "1":
    run.finish()
# else: the script just ends, its clips still queued: the exit drains them before the spool goes
"""


@pytest.mark.parametrize("finish", ["1", "0"])
def test_large_media_files_are_spooled_and_each_step_logs_its_own(client, finish):
    """Files of 1 MiB or more wait as spool files in the agent's staging directory, not in
    memory; each step's file is what was on disk at its call, served back byte for byte."""
    proc = assert_ok(client.python(BIG_FILES, env={"FINISH": finish}))
    shas = next(line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("SHA "))
    view = client.run_view(_run_id(proc), project="media")
    wait_until(lambda: len(_rows(client, view)) == 2 and _all_uploaded(client, view),
               what="both clips uploaded")
    rows = _rows(client, view, keys="big")
    assert [r["step"] for r in rows] == [0, 1]
    for r, sha in zip(rows, shas):
        status, _, body = _download(client, r["url"])
        assert status == 200 and hashlib.sha256(body).hexdigest() == sha, r


LIMITS_SCRIPT = r"""
import json, warnings
import numpy as np
import cohort
with open("big.gif", "wb") as f:  # a GIF file of 100,000 bytes
    f.write(b"GIF89a" + bytes(100000 - 6))
run = cohort.init(project="limits")
errors = []
def attempt(fn):
    try:
        fn()
    except ValueError as e:
        errors.append(str(e))
attempt(lambda: run.log({"x": 1.0, "clip": cohort.Video("big.gif")}))
attempt(lambda: run.log({"x": 2.0, "first": cohort.Image(np.zeros((4, 4, 3), np.uint8)),
                         "imgs": [cohort.Image(np.zeros((4, 4, 3), np.uint8))] * 4}))
# The refused call claimed no key for a type: "first" takes a scalar now.
run.log({"first": 5.0})
# An array's PNG is known to be too large only once the worker encoded it: not sent, a warning;
# the call's scalars are logged.
noise = np.random.default_rng(0).integers(0, 256, size=(256, 256, 3), dtype=np.uint8)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    run.log({"y": 3.0, "noise": cohort.Image(noise),
             "ok": [cohort.Image(np.zeros((4, 4, 3), np.uint8))] * 3})
    run.finish()
print("RESULT " + json.dumps({"limits": list(run._media_limits), "errors": errors,
                              "warnings": [str(w.message) for w in caught], "id": run.id,
                              "failures": cohort.media.stats()["failures"]}))
"""


def test_media_past_the_servers_limits_raise_at_the_call_or_are_not_sent(tmp_path):
    """The server's --max-media-file-bytes and --max-media-per-step reach the SDK with the
    writer's join: a file above the limit or too many media in one step raise at the call (and
    nothing of the call is logged); an encoded array above it is not sent (a warning)."""
    from conftest import ServerProcess
    from dist_helpers import Client
    server = ServerProcess(tmp_path / "server", ["--max-media-file-bytes", "65536",
                                                 "--max-media-per-step", "3"]).start()
    (tmp_path / "client").mkdir()
    limited = Client(server, tmp_path / "client")
    try:
        out = assert_ok(limited.python(LIMITS_SCRIPT))
        result = json.loads(out.stdout.split("RESULT ", 1)[1])
        assert result["limits"] == [65536, 3], result
        assert len(result["errors"]) == 2, result
        assert "'clip'" in result["errors"][0] and "100000 bytes" in result["errors"][0]
        assert "65536: its --max-media-file-bytes" in result["errors"][0], result
        assert "4 media in one step" in result["errors"][1], result
        assert "(3: its --max-media-per-step)" in result["errors"][1], result
        assert any("'noise'" in w and "once encoded" in w and "--max-media-file-bytes" in w
                   for w in result["warnings"]), result
        assert result["failures"] == 1, result
        view = f"/api/v1/runs/{limited.entity}/limits/{result['id']}"

        def names():
            status, keys = limited.api.get(f"{view}/keys")
            return {k["key"] for k in keys["keys"]} if status == 200 else set()
        wait_until(lambda: {"y", "ok", "first"} <= names(), what=names)
        names = names()
        assert not names & {"x", "clip", "imgs", "noise"}, names
        assert "first" in names, names
    finally:
        limited.stop_agents()
        server.stop()
