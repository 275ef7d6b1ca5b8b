"""Run.media(...).download(root) when some rows' blobs are not on the server yet (what a read
right after the writing run's finish() meets: the node agent uploads media after the rows), with
the real `cohort server` (tests/conftest.py): the rows come through the ingest route, two of them
naming blobs uploaded through the public blob routes and two naming blobs never uploaded. Every
uploaded file is written, the others skipped with one warning naming them; a later download,
once the blobs are there, fetches them too."""
import hashlib
import pathlib
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "integration"))
from test_api import entity, join, make_run, runs_path  # noqa: E402

import sdk_helpers  # noqa: E402,F401
import cohort  # noqa: E402
from cohort.api_media import MediaNotUploadedWarning  # noqa: E402


def _upload(api, data):
    sha = hashlib.sha256(data).hexdigest()
    blob = f"/api/v1/blobs/{entity(api)}/{sha}"
    status, body = api.put(f"{blob}/parts/0?size={len(data)}", raw=data)
    assert status == 200, body
    status, done = api.post(f"{blob}/complete", {"size": len(data)})
    assert status == 200 and done["stored"] is True, done
    return sha


def test_download_fetches_every_uploaded_file_and_warns_once_about_the_rest(server, api,
                                                                            tmp_path):
    run = make_run(api, name="partial-media")
    join(api, run, "rank_0")
    pages = [f"<p>page {i}</p>".encode() for i in range(4)]
    shas = [hashlib.sha256(p).hexdigest() for p in pages]
    for i in (0, 2):  # pages 1 and 3: rows whose blob never came (yet)
        _upload(api, pages[i])
    now = int(time.time() * 1000)
    status, ack = api.post(f"{runs_path(api)}/{run['id']}/writers/rank_0/batches", {
        "seq": 1, "media": [{"key": "h", "step": i, "time": now + i, "type": "html",
                             "sha256": shas[i], "size": len(pages[i]), "mime": "text/html"}
                            for i in range(4)]})
    assert status == 200, ack

    reader = cohort.Api(base_url=server.url, api_key=server.config["api_key"])
    r = reader.run(f"{entity(api)}/proj/{run['id']}")
    rows = r.media("h")
    assert [m["uploaded"] for m in rows] == [True, False, True, False]
    root = tmp_path / "dl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = rows.download(str(root))
    # Rows 0 and 2 written (also the one after the first missing row), 1 and 3 skipped.
    assert sorted(pathlib.Path(p).name for p in paths) == ["0_0.html", "2_0.html"]
    assert (root / "h" / "rank_0" / "2_0.html").read_bytes() == pages[2]
    assert not (root / "h" / "rank_0" / "1_0.html").exists()
    mine = [w for w in caught if issubclass(w.category, MediaNotUploadedWarning)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    text = str(mine[0].message)
    assert "2 of 4 files are not uploaded" in text, text
    assert "h step 1 index 0" in text and "h step 3 index 0" in text, text
    assert "download again later" in text, text
    assert mine[0].filename == __file__  # points at the caller

    # The blobs arrive: a new download fetches everything, the files already there kept.
    for i in (1, 3):
        _upload(api, pages[i])
    with warnings.catch_warnings():
        warnings.simplefilter("error", MediaNotUploadedWarning)
        paths = r.media("h").download(str(root))
    assert len(paths) == 4
    for i in range(4):
        assert (root / "h" / "rank_0" / f"{i}_0.html").read_bytes() == pages[i]
