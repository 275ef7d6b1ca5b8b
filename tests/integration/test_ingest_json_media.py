"""Histograms and media rows in the JSON body of POST .../batches (docs/api.md "Ingest") against
the real `cohort server`: a PNG uploaded through the public blob routes, then named by a JSON
media row, and histograms (uniform and explicit bins) read back through GET .../histograms and
GET .../media; a bad row is 400 naming the field, and nothing of its batch is stored."""
import hashlib
import struct
import urllib.error
import urllib.request
import zlib

from test_api import entity, join, make_run, runs_path


def png(width, height):
    """A valid RGB PNG of the given size (every pixel grey), without an imaging library."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def request(api, method, path, data=None):
    """(status, body bytes) of a request with the API key."""
    req = urllib.request.Request(api.url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + api.key)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def upload_blob(api, data):
    """Uploads `data` as one part through the public blob routes and completes it."""
    sha = hashlib.sha256(data).hexdigest()
    blob = f"/api/v1/blobs/{entity(api)}/{sha}"
    status, body = request(api, "PUT", f"{blob}/parts/0?size={len(data)}", data)
    assert status == 200, body
    status, done = api.post(f"{blob}/complete", {"size": len(data)})
    assert status == 200 and done["stored"] is True, done
    return sha


def test_json_histograms_and_images_are_stored_and_read_back(server, api):
    run = make_run(api, name="json-media")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    image = png(8, 4)
    sha = upload_blob(api, image)

    status, ack = api.post(f"{base}/writers/rank0/batches", {
        "seq": 1,
        "history": [{"step": 3, "time": 1700000000000, "values": {"loss": 0.5}}],
        "histograms": [
            {"key": "grad/w", "step": 3, "time": 1700000000001, "lo": -1, "hi": 1,
             "counts": [1, 4, 2.5, 0]},
            {"key": "act", "step": 3, "time": 1700000000002, "edges": [0, 1, 10],
             "counts": [7, 8]}],
        "media": [{"key": "samples", "step": 3, "time": 1700000000003, "type": "image",
                   "sha256": sha, "size": len(image), "mime": "image/png", "width": 8,
                   "height": 4, "caption": "grey \u00e9"}]})
    assert status == 200, ack
    assert ack["duplicate"] is False and ack["points"] == 1

    status, body = api.get(f"{base}/histograms?keys=grad/w,act")
    assert status == 200, body
    series = {s["key"]: s for s in body["histograms"]}
    assert set(series) == {"grad/w", "act"}
    g = series["grad/w"]
    assert g["writer"] == "rank0" and g["count"] == 1
    assert g["steps"][0]["step"] == 3 and g["steps"][0]["time_ms"] == 1700000000001
    assert (g["steps"][0]["lo"], g["steps"][0]["hi"]) == (-1, 1)
    assert g["steps"][0]["counts"] == [1, 4, 2.5, 0]
    a = series["act"]
    edges = a.get("edges") or a["steps"][0]["edges"]
    assert edges == [0, 1, 10] and a["steps"][0]["counts"] == [7, 8]

    status, body = api.get(f"{base}/media")
    assert status == 200, body
    assert len(body["media"]) == 1, body
    row = body["media"][0]
    assert row["key"] == "samples" and row["writer"] == "rank0"
    assert (row["step"], row["index"], row["time_ms"]) == (3, 0, 1700000000003)
    assert (row["type"], row["mime"], row["sha256"]) == ("image", "image/png", sha)
    assert (row["size"], row["width"], row["height"]) == (len(image), 8, 4)
    assert row["caption"] == "grey \u00e9" and row["uploaded"] is True
    status, got = request(api, "GET", f"{base}/media/{sha}")
    assert status == 200 and got == image

    status, body = api.get(f"{base}/keys")
    assert status == 200, body
    types = {k["key"]: k["type"] for k in body["keys"]}
    assert types == {"loss": "scalar", "grad/w": "histogram", "act": "histogram",
                     "samples": "image"}


def test_a_bad_json_histogram_or_media_row_is_400_naming_the_field_and_stores_nothing(server,
                                                                                     api):
    run = make_run(api, name="json-media-bad")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    image = png(2, 2)
    sha = upload_blob(api, image)
    good_hist = {"key": "h", "step": 1, "time": 1700000000001, "lo": 0, "hi": 1, "counts": [1]}
    good_media = {"key": "img", "step": 1, "time": 1700000000002, "type": "image",
                  "sha256": sha, "size": len(image), "mime": "image/png"}

    def post(**sections):
        return api.post(f"{base}/writers/rank0/batches", {
            "seq": 7, "history": [{"step": 1, "time": 1700000000000, "values": {"loss": 1}}],
            **sections})

    cases = [
        ({"histograms": [good_hist, dict(good_hist, step=2, counts=[1, "x"])]},
         "histograms[1].counts[1]: expected a number"),
        ({"histograms": [dict(good_hist, edges=[0, 1], counts=[1, 2], lo=None, hi=None)]},
         "histograms[0] (key 'h'): 2 counts but 2 edges (need 3)"),
        ({"histograms": [dict(good_hist, bins=3)]}, "histograms[0].bins: unknown field"),
        ({"media": [dict(good_media, sha256=sha.upper())]},
         "media[0] (key 'img'): sha256: expected 64 lowercase hex digits"),
        ({"media": [{k: v for k, v in good_media.items() if k != "mime"}]},
         "media[0].mime: required"),
        ({"histograms": [good_hist], "media": [dict(good_media, key="h")]},
         "media[0]: key 'h' is logged as a histogram and as image in the same batch"),
    ]
    for sections, message in cases:
        status, err = post(**sections)
        assert status == 400, (sections, err)
        assert err["error"]["code"] == "invalid_argument"
        assert message in err["error"]["message"], (message, err)

    # Nothing of those batches was stored: no key, no point, and seq 7 is still unused.
    status, body = api.get(f"{base}/keys")
    assert status == 200 and body["keys"] == [], body
    assert api.get(f"{base}/histograms")[1]["histograms"] == []
    assert api.get(f"{base}/media")[1]["media"] == []
    status, ack = post(histograms=[good_hist], media=[good_media])
    assert status == 200 and ack["duplicate"] is False, ack
    assert len(api.get(f"{base}/media")[1]["media"]) == 1


def test_a_tables_cell_bytes_count_against_the_runs_media_budget(tmp_path):
    """A table row carries the bytes of its media cells (`cell_bytes`): the run's media budget
    (`--max-run-media-bytes`) counts them with the document, so a table of many images cannot
    slip past it. The media of a batch that would pass the budget are refused (the answer names
    the flag); the rest of the batch is stored: the scalars logged with an image are never lost
    with it (a 413 made the agent drop the whole batch)."""
    import json
    from conftest import ServerProcess
    server = ServerProcess(tmp_path, extra_args=["--max-run-media-bytes", "1000"]).start()
    try:
        api = server.api()
        run = make_run(api, name="cell-budget")
        join(api, run, "rank0")
        base = f"{runs_path(api)}/{run['id']}"
        doc = json.dumps({"columns": ["i"], "data": [[1]]}).encode()
        sha = upload_blob(api, doc)

        def table(seq, step, cell_bytes):
            return {"seq": seq,
                    "history": [{"step": step, "time": 1700000000000 + step,
                                 "values": {"loss": 1.0 / (step + 1)}}],
                    "media": [
                        {"key": "preds", "step": step, "time": 1700000000000 + step,
                         "type": "table", "sha256": sha, "size": len(doc),
                         "mime": "application/json", "width": 1, "height": 1,
                         "cell_bytes": cell_bytes}]}
        status, ack = api.post(f"{base}/writers/rank0/batches", table(1, 0, 600))
        assert status == 200 and "media_refused" not in ack, ack
        status, ack = api.post(f"{base}/writers/rank0/batches", table(2, 1, 400))
        assert status == 200 and ack["media_refused"] == 1 and ack["points"] == 1, ack
        assert "--max-run-media-bytes" in ack["media_refused_reason"], ack
        assert f"would hold {2 * len(doc) + 1000} bytes" in ack["media_refused_reason"], ack
        status, listing = api.get(f"{base}/media?keys=preds")
        assert status == 200
        assert [(m["step"], m["cell_bytes"]) for m in listing["media"]] == [(0, 600)], listing
        status, hist = api.get(f"{base}/history?keys=loss")
        assert status == 200 and json.dumps(hist).count("0.5") >= 1, hist  # step 1's loss
        # Within the budget once the cells are fewer.
        status, ack = api.post(f"{base}/writers/rank0/batches", table(3, 2, 300))
        assert status == 200 and "media_refused" not in ack, ack
        # A file over --max-media-file-bytes, or an index past --max-media-per-step: the same
        # (a blob not held yet: its row's size counts; a held one counts its own size).
        big = {"key": "img", "step": 3, "time": 1700000000003, "type": "image",
               "sha256": "ab" * 32, "size": 1 << 40, "mime": "image/png"}
        status, ack = api.post(f"{base}/writers/rank0/batches", {
            "seq": 4, "history": [{"step": 3, "time": 1700000000003, "values": {"loss": 7.0}}],
            "media": [big, dict(big, size=len(doc), index=5000)]})
        assert status == 200 and ack["media_refused"] == 2 and ack["points"] == 1, ack
        assert "--max-media-file-bytes" in ack["media_refused_reason"], ack
    finally:
        server.stop()


def test_media_is_served_with_its_blobs_size_and_a_long_runs_table_at_its_latest_step(
        server, api, tmp_path):
    """A row's declared size is the client's word until its blob is held: the bytes are served
    with the size the store recorded when it checked them (a row saying 10 bytes got 10 bytes,
    cached for a year). And
    the table route without ?step= answers the key's latest step, however many rows the key
    has (the rows were read capped at 100,000 in step order, so a long run got an old table)."""
    run = make_run(api, name="json-media-sizes")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    image = png(6, 5)
    sha = upload_blob(api, image)
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 1, "media": [
        {"key": "img", "step": 0, "time": 1700000000000, "type": "image", "sha256": sha,
         "size": 10, "mime": "image/png"}]})
    assert status == 200, ack
    status, body = request(api, "GET", f"{base}/media/{sha}")
    assert status == 200 and body == image, (status, len(body))

    old = b'{"columns": ["a"], "data": [[1]]}'
    new = b'{"columns": ["a"], "data": [[2]]}'
    sha_old, sha_new = upload_blob(api, old), upload_blob(api, new)
    steps, per_batch = 100_001, 4000
    for seq, start in enumerate(range(0, steps, per_batch), start=2):
        rows = [{"key": "t", "step": s, "time": 1700000000000 + s, "type": "table",
                 "sha256": sha_new if s == steps - 1 else sha_old,
                 "size": len(new if s == steps - 1 else old), "mime": "application/json",
                 "width": 1, "height": 1}
                for s in range(start, min(steps, start + per_batch))]
        status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": seq, "media": rows})
        assert status == 200, ack
    status, page = api.get(f"{base}/tables/t")
    assert status == 200, page
    assert page["step"] == steps - 1 and page["data"] == [[2]], {k: page[k] for k in ("step",)}
    # Paging far past the end: an empty page (offset + limit overflowed int64 before).
    status, page = api.get(f"{base}/tables/t?offset={2**63 - 1}")
    assert status == 200 and page["data"] == [], page
    # More rows than one answer lists (100,000): `cohort media get` refuses rather than write
    # a part and say it is done; `ls` says it shows the first ones.
    import os
    import subprocess
    from conftest import COHORT_BIN
    env = dict(os.environ, COHORT_BASE_URL=api.url, COHORT_API_KEY=api.key)
    target = f"{entity(api)}/proj/{run['id']}"
    r = subprocess.run([str(COHORT_BIN), "media", "get", target, "--key", "t", "--out",
                        str(tmp_path / "t")], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "more than the 100000" in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "t").exists()
    r = subprocess.run([str(COHORT_BIN), "media", "ls", target, "--key", "t"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "the first 100000 rows only" in r.stderr, r.stderr[-2000:]


def test_a_blob_of_another_size_than_its_media_row_says_is_refused(server, api):
    """A row may name a blob before it is uploaded, with the size its client declares: the media
    limits (--max-media-file-bytes, --max-run-media-bytes) are checked against that size. An
    upload of another size was taken, so a row saying 1 byte served any size past the limits;
    it is refused now, naming the row, and nothing is stored."""
    run = make_run(api, name="json-media-missized")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    video = b"\x00\x00\x00\x18ftypmp42" + bytes(5000)
    sha = hashlib.sha256(video).hexdigest()
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 1, "media": [
        {"key": "clip", "step": 0, "time": 1700000000000, "type": "video", "sha256": sha,
         "size": 1, "mime": "video/mp4"}]})
    assert status == 200 and "media_refused" not in ack, ack
    blob = f"/api/v1/blobs/{entity(api)}/{sha}"
    status, body = request(api, "PUT", f"{blob}/parts/0?size={len(video)}", video)
    assert status == 200, body
    status, done = api.post(f"{blob}/complete", {"size": len(video)})
    assert status == 400, done
    message = done["error"]["message"]
    assert f"run {run['id']}, key 'clip', step 0, index 0 names it with 1 bytes" in message, done
    status, body = api.get(f"{base}/media?keys=clip")
    assert status == 200 and body["media"][0]["uploaded"] is False, body
    status, _ = request(api, "GET", f"{base}/media/{sha}")
    assert status == 404
    # The row said the true size: the same upload is taken.
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 2, "media": [
        {"key": "clip", "step": 0, "time": 1700000000000, "type": "video", "sha256": sha,
         "size": len(video), "mime": "video/mp4"}]})
    assert status == 200, ack
    status, done = api.post(f"{blob}/complete", {"size": len(video)})
    assert status == 200 and done["stored"] is True, done
    status, got = request(api, "GET", f"{base}/media/{sha}")
    assert status == 200 and got == video


def test_media_listing_says_truncated_only_when_more_rows_matched(server, api):
    # `truncated` was set when the page was full, also when nothing was left out.
    run = make_run(api, name="media-pages")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    image = png(2, 2)
    sha = upload_blob(api, image)
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 1, "media": [
        {"key": "s", "step": step, "time": 1700000000000 + step, "type": "image", "sha256": sha,
         "size": len(image), "mime": "image/png", "width": 2, "height": 2}
        for step in range(3)]})
    assert status == 200, ack
    status, body = api.get(f"{base}/media?keys=s&limit=3")
    assert status == 200 and len(body["media"]) == 3 and body["truncated"] is False, body
    status, body = api.get(f"{base}/media?keys=s&limit=2")
    assert status == 200 and body["truncated"] is True, body
    assert [r["step"] for r in body["media"]] == [0, 1], body


def test_cohort_media_get_writes_nothing_outside_its_directory_nor_a_partial_set(
        server, api, tmp_path):
    # A key is any text: "../escape" made `cohort media get` write beside --out; and a listing
    # the server cut at its limit was downloaded as if whole (exit 0).
    import os
    import subprocess
    from conftest import COHORT_BIN
    run = make_run(api, name="media-cli")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    image = png(2, 2)
    sha = upload_blob(api, image)
    row = {"step": 0, "time": 1700000000000, "type": "image", "sha256": sha,
           "size": len(image), "mime": "image/png"}
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 1, "media": [
        dict(row, key="../escape"), dict(row, key="val/ok"), dict(row, key="deep//x/./y/")]})
    assert status == 200, ack
    env = dict(os.environ, COHORT_BASE_URL=api.url, COHORT_API_KEY=api.key, HOME=str(tmp_path))
    target = f"{entity(api)}/proj/{run['id']}"
    out = tmp_path / "out"

    def media(*args):
        return subprocess.run([str(COHORT_BIN), "media", *args], env=env, capture_output=True,
                              text=True, timeout=60)
    r = media("get", target, "--out", str(out))
    assert r.returncode != 0 and "leaves" in r.stderr, (r.stdout, r.stderr)
    assert not (tmp_path / "escape").exists()
    r = media("get", target, "--key", "val/ok", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "val" / "ok" / "rank0" / "0_0.png").read_bytes() == image
    # Empty and "." segments of a key name nothing: written as its plain path, not refused.
    r = media("get", target, "--key", "deep//x/./y/", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "deep" / "x" / "y" / "rank0" / "0_0.png").read_bytes() == image


def test_cohort_media_get_fetches_every_uploaded_row_and_keeps_what_it_has(
        server, api, tmp_path):
    # A row whose blob never arrived ended the get at that row (exit 1, later rows unfetched);
    # a second get fetched every file again; nothing said how far it had come.
    import os
    import subprocess
    from conftest import COHORT_BIN
    run = make_run(api, name="media-get-partial")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    images = {s: png(2 + s, 2) for s in range(4)}
    shas = {s: (upload_blob(api, img) if s != 1 else hashlib.sha256(img).hexdigest())
            for s, img in images.items()}  # step 1's bytes never uploaded
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 1, "media": [
        {"key": "k", "step": s, "time": 1700000000000 + s, "type": "image", "sha256": shas[s],
         "size": len(images[s]), "mime": "image/png"} for s in images]})
    assert status == 200, ack
    env = dict(os.environ, COHORT_BASE_URL=api.url, COHORT_API_KEY=api.key, HOME=str(tmp_path))
    target = f"{entity(api)}/proj/{run['id']}"
    out = tmp_path / "out"

    def get(*args):
        return subprocess.run([str(COHORT_BIN), "media", "get", target, "--out", str(out),
                               *args], env=env, capture_output=True, text=True, timeout=60)
    r = get("--progress", "always")
    assert r.returncode == 1, r.stderr
    assert "k rank0 step 1" in r.stderr and "not uploaded" in r.stderr, r.stderr
    assert r.stderr.count("not uploaded") == 1, r.stderr
    assert "fetching [" in r.stderr and "100%" in r.stderr, r.stderr
    files = {s: out / "k" / "rank0" / f"{s}_0.png" for s in images}
    for s in (0, 2, 3):
        assert files[s].read_bytes() == images[s]
    assert not files[1].exists()
    inodes = {s: files[s].stat().st_ino for s in (0, 2, 3)}
    files[3].write_bytes(images[3][:-1] + b"\x00")  # same size, other bytes: fetched again
    r = get()
    assert r.returncode == 1, r.stderr
    assert "1 file(s)" in r.stderr and "2 already there" in r.stderr, r.stderr
    assert {s: files[s].stat().st_ino for s in (0, 2)} == {s: inodes[s] for s in (0, 2)}
    assert files[3].read_bytes() == images[3]
    # Its blob uploaded at last: the next get fetches that one file and succeeds.
    upload_blob(api, images[1])
    r = get()
    assert r.returncode == 0, r.stderr
    assert "1 file(s)" in r.stderr and "3 already there" in r.stderr, r.stderr
    assert files[1].read_bytes() == images[1]


def test_cohort_media_get_tells_a_lost_file_from_one_not_uploaded_yet(server, api, tmp_path):
    # A row listed as uploaded whose blob the server's blob store lost (a store restored without
    # its blobs) was reported as "not uploaded (yet) ... get again later", which never helps.
    import os
    import subprocess
    from conftest import COHORT_BIN
    run = make_run(api, name="media-get-lost")
    join(api, run, "rank0")
    base = f"{runs_path(api)}/{run['id']}"
    image = png(3, 3)
    sha = upload_blob(api, image)
    status, ack = api.post(f"{base}/writers/rank0/batches", {"seq": 1, "media": [
        {"key": "k", "step": 0, "time": 1700000000000, "type": "image", "sha256": sha,
         "size": len(image), "mime": "image/png"}]})
    assert status == 200, ack
    blob = server.data_dir / "blobs" / "sha256" / sha[:2] / sha
    assert blob.exists(), list((server.data_dir / "blobs").rglob("*"))
    blob.unlink()
    env = dict(os.environ, COHORT_BASE_URL=api.url, COHORT_API_KEY=api.key, HOME=str(tmp_path))
    r = subprocess.run([str(COHORT_BIN), "media", "get", f"{entity(api)}/proj/{run['id']}",
                        "--out", str(tmp_path / "out")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "not uploaded" not in r.stderr, r.stderr
    assert "listed as uploaded whose file the server does not have" in r.stderr, r.stderr
    assert "Backups" in r.stderr and "k rank0 step 0" in r.stderr, r.stderr
