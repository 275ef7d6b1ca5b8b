"""cohort.Image, Audio, Video, Html and Table without a server: what each accepts (layouts,
dtypes, files), what it refuses at construction (naming the problem), what it encodes (PNG pixels,
WAV samples, the table document) and how ``run.log``'s converter turns media and lists of media
into one step's set."""
import io
import json
import wave

import numpy as np
import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
import cohort
from cohort._values import convert
from cohort.media import _MediaSet

PILImage = pytest.importorskip("PIL.Image", reason="cohort.Image encodes arrays with Pillow")


def _pixels(data):
    with PILImage.open(io.BytesIO(data)) as im:
        return np.asarray(im)


def test_images_of_every_layout_encode_to_png_with_their_pixels():
    rng = np.random.default_rng(0)
    hwc = rng.integers(0, 256, size=(5, 6, 3), dtype=np.uint8)
    data, mime, w, h, _ = cohort.Image(hwc)._encode()
    assert (mime, w, h) == ("image/png", 6, 5) and data.startswith(b"\x89PNG")
    assert np.array_equal(_pixels(data), hwc)
    chw = hwc.transpose(2, 0, 1).copy()  # (3, 5, 6): channels first
    assert np.array_equal(_pixels(cohort.Image(chw)._encode()[0]), hwc)
    # HWC wins when both readings fit (as the seed's SDK does): (3, 5, 4) is 3 rows of RGBA.
    assert cohort.Image(np.zeros((3, 5, 4), dtype=np.uint8)).height == 3
    grey = rng.integers(0, 256, size=(3, 7), dtype=np.uint8)
    assert np.array_equal(_pixels(cohort.Image(grey[None])._encode()[0]), grey)  # 1HW
    rgba = rng.random((2, 3, 4))
    assert np.array_equal(_pixels(cohort.Image(rgba)._encode()[0]),
                          np.rint(rgba * 255).astype(np.uint8))
    assert np.array_equal(_pixels(cohort.Image(np.array([[True, False]]))._encode()[0]),
                          np.array([[255, 0]], dtype=np.uint8))


def test_the_array_is_copied_at_the_call():
    a = np.zeros((2, 2), dtype=np.uint8)
    img = cohort.Image(a)
    a[:] = 9  # the training loop reuses its buffer before the worker encodes
    assert _pixels(img._encode()[0]).max() == 0


def test_a_file_is_read_when_the_value_is_made(tmp_path):
    """plt.savefig("fig.png"); run.log({"fig": Image("fig.png")}) in a loop: each step logs the
    figure it saved, not the next one (the worker encodes later; it read the file then)."""
    p = tmp_path / "fig.png"
    PILImage.fromarray(np.zeros((2, 2, 3), dtype=np.uint8)).save(p)
    first = cohort.Image(str(p))
    PILImage.fromarray(np.full((2, 2, 3), 255, dtype=np.uint8)).save(p)  # the next figure
    second = cohort.Image(str(p))
    assert _pixels(first._encode()[0]).max() == 0
    assert _pixels(second._encode()[0]).min() == 255
    gif = tmp_path / "clip.gif"
    gif.write_bytes(b"GIF89a" + b"A" * 10)
    clip = cohort.Video(str(gif))
    gif.write_bytes(b"GIF89a" + b"B" * 10)
    wav = tmp_path / "a.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 80)
    sound = cohort.Audio(str(wav))
    first_wav = wav.read_bytes()
    wav.unlink()
    p.unlink()
    gif.unlink()  # deleted right after log: still logged
    assert clip._encode()[0] == b"GIF89a" + b"A" * 10
    assert sound._encode()[0] == first_wav and sound._encode()[4] == 10  # 80 samples at 8 kHz
    assert first._encode()[0].startswith(b"\x89PNG")


def test_torch_tensors_and_pil_images():
    torch = pytest.importorskip("torch")
    t = torch.rand(3, 4, 5)
    want = np.rint(t.numpy().astype(np.float64).transpose(1, 2, 0) * 255).astype(np.uint8)
    assert np.array_equal(_pixels(cohort.Image(t)._encode()[0]), want)
    pil = PILImage.fromarray(want)
    data, _, w, h, _ = cohort.Image(pil, caption="pil")._encode()
    assert (w, h) == (5, 4) and np.array_equal(_pixels(data), want)


def test_bad_images_are_refused_naming_the_problem(tmp_path):
    for bad, text in [(np.zeros((2, 2, 7)), "got shape (2, 2, 7)"),
                      (np.zeros((2, 2, 2, 3)), "got shape"),
                      (np.full((2, 2), 300.0), "float pixels must be in [0, 1]"),
                      (np.array([[np.nan]]), "must be finite"),
                      (np.array([[300]], dtype=np.int32), "integer pixels must be 0..255"),
                      (np.zeros((0, 3)), "empty image"),
                      (np.zeros((2, 2), dtype=np.complex64), "unsupported dtype")]:
        with pytest.raises(ValueError, match=None) as e:
            cohort.Image(bad)
        assert text in str(e.value), (text, str(e.value))
    fake = tmp_path / "fake.png"
    fake.write_bytes(b"GIF89a not a png")
    with pytest.raises(ValueError, match="is not a image/png file"):
        cohort.Image(str(fake))
    with pytest.raises(ValueError, match="unsupported file type '.txt'"):
        (tmp_path / "a.txt").write_text("x")
        cohort.Image(str(tmp_path / "a.txt"))
    with pytest.raises(ValueError, match="caption longer than 4096 bytes"):
        cohort.Image(np.zeros((1, 1)), caption="x" * 5000)
    # Text no UTF-8 holds (a lone surrogate) is refused at the call: it failed on the worker,
    # the value lost there (counted) instead of an exception where it was made.
    with pytest.raises(ValueError, match="caption: not valid text"):
        cohort.Image(np.zeros((1, 1)), caption="x\udcff")
    with pytest.raises(ValueError, match="row 0, column 'a': not valid text"):
        cohort.Table(columns=["a"], data=[["x\udcff"]])
    with pytest.raises(ValueError, match="column name: not valid text"):
        cohort.Table(columns=["a\udcff"], data=[[1]])


def test_a_pil_image_of_32_bit_integers_is_stored_as_16_bit_png_or_refused_at_the_call():
    # Mode I passed the call and failed on the worker (PNG cannot hold it as it is).
    from PIL import Image as PILImage
    depth = PILImage.fromarray((np.arange(12, dtype=np.int32) * 1000).reshape(3, 4))
    data, mime, width, height, _ = cohort.Image(depth)._encode()
    back = PILImage.open(io.BytesIO(data))
    assert (mime, width, height, back.mode) == ("image/png", 4, 3, "I;16")
    assert back.getextrema() == (0, 11000)
    with pytest.raises(ValueError, match="pixels -1..70000"):
        cohort.Image(PILImage.fromarray(np.array([[-1, 70000]], dtype=np.int32)))


def test_audio_is_16_bit_pcm_wav_and_files_keep_their_bytes(tmp_path):
    stereo = np.stack([np.linspace(-1, 1, 400), np.zeros(400)], axis=1).astype(np.float32)
    data, mime, _, _, duration = cohort.Audio(stereo, sample_rate=4000)._encode()
    assert (mime, duration) == ("audio/wav", 100)
    with wave.open(io.BytesIO(data)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (2, 2, 4000)
        frames = np.frombuffer(w.readframes(400), dtype="<i2").reshape(400, 2)
    assert frames[0, 0] == -32767 and frames[-1, 0] == 32767 and not frames[:, 1].any()
    path = tmp_path / "a.wav"
    path.write_bytes(data)
    again = cohort.Audio(str(path), caption="file")._encode()
    assert again[0] == data and again[4] == 100
    with pytest.raises(ValueError, match="sample_rate"):
        cohort.Audio(stereo)
    with pytest.raises(ValueError, match=r"in \[-1, 1\]"):
        cohort.Audio(stereo * 3, sample_rate=10)
    with pytest.raises(ValueError, match="unsupported dtype"):
        cohort.Audio(np.zeros(4, dtype=np.int64), sample_rate=10)


def test_video_files_and_html(tmp_path):
    gif = tmp_path / "v.gif"
    PILImage.fromarray(np.zeros((2, 2, 3), dtype=np.uint8)).save(gif)
    data, mime, *_ = cohort.Video(str(gif))._encode()
    assert data == gif.read_bytes() and mime == "image/gif"
    with pytest.raises(ValueError, match="write them to a .mp4 or .gif file"):
        cohort.Video(np.zeros((2, 2, 2, 3)))
    with pytest.raises(ValueError, match="unsupported file type"):
        cohort.Video(str(gif), format="avi")
    assert cohort.Html("<b>hi</b>")._encode()[:2] == (b"<b>hi</b>", "text/html")
    page = tmp_path / "p.html"
    page.write_text("<i>file</i>")
    assert cohort.Html(str(page))._encode()[0] == b"<i>file</i>"


def test_an_html_path_that_names_no_file_is_refused(tmp_path):
    # It was logged as the page: the text of the path.
    missing = tmp_path / "report" / "page.html"
    for data in (str(missing), str(tmp_path / "PAGE.HTM"), "page.html", missing):
        with pytest.raises(ValueError, match=r"Html: .*(page|PAGE)\.(html|HTM)' is not a file"):
            cohort.Html(data)
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(ValueError, match="is not a file"):
        cohort.Html(str(tmp_path / "dir.html"))
    # Markup is text even when it ends like a file name.
    assert cohort.Html("<a href='x'>see x.html")._encode()[0] == b"<a href='x'>see x.html"


def test_tables_from_rows_and_dataframes():
    pd = pytest.importorskip("pandas")
    t = cohort.Table(columns=["a", "b", "c"],
                     data=[[1, "x", True], [np.float32(0.5), None, float("nan")]])
    data, mime, ncols, nrows, _ = t._encode()
    assert (mime, ncols, nrows) == ("application/json", 3, 2)
    assert json.loads(data) == {"columns": ["a", "b", "c"],
                                "data": [[1, "x", True], [0.5, None, None]]}
    df = pd.DataFrame({"n": [1, 2], "s": ["p", "q"]})
    assert json.loads(cohort.Table(dataframe=df)._encode()[0])["data"] == [[1, "p"], [2, "q"]]
    with pytest.raises(ValueError, match="row 1 has 1 cells, expected 2"):
        cohort.Table(columns=["a", "b"], data=[[1, 2], [3]])
    with pytest.raises(ValueError, match=r"row 0, column 'b': a dict cannot be a cell"):
        cohort.Table(columns=["a", "b"], data=[[1, {}]])
    with pytest.raises(ValueError, match="repeated column names"):
        cohort.Table(columns=["a", "a"], data=[])


def test_table_media_cells_are_staged_by_the_worker():
    img = cohort.Image(np.zeros((2, 3, 3), dtype=np.uint8), caption="z")
    t = cohort.Table(columns=["i", "img"], data=[[0, img], [1, img], [2, None]])
    with pytest.raises(ValueError, match="media cells are encoded by the media worker"):
        t._encode()
    staged = []

    def stage(cell):
        staged.append(cell)
        return {"_type": cell._cohort_media_type, "sha256": "ab" * 32}
    data, mime, ncols, nrows, _ = t._encode(stage)
    assert (mime, ncols, nrows) == ("application/json", 2, 3) and staged == [img, img]
    assert json.loads(data)["data"] == [[0, {"_type": "image", "sha256": "ab" * 32}],
                                        [1, {"_type": "image", "sha256": "ab" * 32}], [2, None]]
    with pytest.raises(ValueError, match=r"row 0, column 'b': a Table cannot be a cell"):
        cohort.Table(columns=["a", "b"], data=[[1, t]])


def test_the_converter_turns_media_and_lists_into_one_set():
    img = cohort.Image(np.zeros((1, 1), dtype=np.uint8))
    one = convert("k", img)
    assert isinstance(one, _MediaSet) and one.items == [img] and one._cohort_media_type == "image"
    many = convert("k", [img, img])
    assert len(many.items) == 2
    with pytest.raises(TypeError, match="'k': a list of media must be of one type"):
        convert("k", [img, cohort.Html("<p>")])
    with pytest.raises(TypeError, match="'k': a list of media must hold media only"):
        convert("k", [img, 1.0])
    # How many and the largest file known: what the log call checks against the server's
    # limits (Run::CheckMediaSet); an array's file is not known before it is encoded.
    assert convert("k", [img] * 1025).sizes == (1025, -1)
    hist = convert("k", [1.0, 2.0])  # a list of numbers: a histogram, not a media set
    assert isinstance(hist, tuple) and (hist[0], hist[1]) == (1.0, 2.0)


def test_a_disabled_run_accepts_media_and_logs_nothing():
    run = cohort.init(mode="disabled")
    run.log({"img": cohort.Image(np.zeros((2, 2), dtype=np.uint8)), "x": 1.0})
    run.finish()


def test_image_takes_the_seed_sdks_arguments():
    a = np.zeros((2, 3, 3), dtype=np.uint8)
    a[..., 0] = 255
    grey = cohort.Image(a, "L", caption="red as grey")
    assert grey.caption == "red as grey"
    assert _pixels(grey._encode()[0]).shape == (2, 3)  # converted to one channel
    with pytest.warns(RuntimeWarning, match="boxes not stored"):
        cohort.Image(a, boxes={"predictions": {}})
    with pytest.raises(TypeError, match="unexpected argument"):
        cohort.Image(a, colour="red")
    with pytest.raises(ValueError, match="mode 'CMYK'"):
        cohort.Image(a, mode="CMYK")


class _MediaRun:
    """What the media worker's hand-over uses of a run (no agent): intents and rows recorded."""

    def __init__(self, staging):
        self._artifact_staging_dir = str(staging)
        self.intents, self.rows = [], []

    def _log_artifact_intent(self, text):
        self.intents.append(json.loads(text))
        return "id"

    def _log_media(self, key, media_type, step, rows):
        self.rows.append((key, media_type, step, rows))


class _Unencodable(cohort.Image):
    """A cell that fails on the worker thread (as a value Pillow cannot encode does)."""

    def _encode(self):
        raise OSError("gone.png: cannot be encoded")


def test_a_table_whose_cell_cannot_be_encoded_stages_nothing_and_logs_nothing(tmp_path):
    from cohort import media
    gone = tmp_path / "gone.png"
    PILImage.fromarray(np.zeros((2, 2, 3), dtype=np.uint8)).save(gone)
    ok_cell = cohort.Image(np.full((2, 3, 3), 9, dtype=np.uint8))
    bad = cohort.Table(columns=["a", "b"], data=[[ok_cell, _Unencodable(str(gone))]])
    good = cohort.Table(columns=["a"], data=[[ok_cell]])
    run = _MediaRun(tmp_path / "staging")
    out = media._hand_over(run, [("bad", media.media_set("bad", bad), 0),
                                 ("good", media.media_set("good", good), 1)])
    assert [(k, s, e is None) for k, s, e in out] == [("bad", 0, False), ("good", 1, True)], out
    assert "gone.png" in str(out[0][2])
    (intent,) = run.intents
    # Only the good table's files: its cell and its document; none of the failed table's.
    assert len(intent["files"]) == 2, intent
    staged = sorted(p.name for p in (tmp_path / "staging" / intent["id"]).iterdir()
                    if p.name != ".owner" and not p.name.startswith("."))
    assert staged == sorted(f["path"] for f in intent["files"]), staged
    assert [(k, t, s) for k, t, s, _ in run.rows] == [("good", "table", 1)]
    doc = json.loads((tmp_path / "staging" / intent["id"] / "1-0").read_bytes())
    cell = doc["data"][0][0]
    assert cell["_type"] == "image" and any(f["sha256"] == cell["sha256"] for f in intent["files"])


def test_a_large_file_waits_as_a_spool_file_not_in_memory(tmp_path):
    """A video of hundreds of MB logged from a file waits in the worker's queue as a private copy
    on disk (hashed by the worker), not as bytes; the worker links or copies it into
    the staging directory; the copy goes with the value."""
    import gc
    import hashlib
    import os
    from cohort import media
    big = tmp_path / "clip.gif"
    data = b"GIF89a" + os.urandom(2 << 20)
    big.write_bytes(data)
    clip = cohort.Video(str(big), caption="big")
    spooled = clip._file
    assert not isinstance(spooled, bytes), "held in memory"
    assert (spooled.size, spooled.digest()) == (len(data), hashlib.sha256(data).hexdigest())
    big.write_bytes(b"GIF89a" + b"next")  # the script's next clip: not what this one logs
    run = _MediaRun(tmp_path / "staging")
    out = media._hand_over(run, [("clip", media.media_set("clip", [clip, clip]), 3)])
    assert [(k, s, e) for k, s, e in out] == [("clip", 3, None)]
    (intent,) = run.intents
    assert [f["size"] for f in intent["files"]] == [len(data), len(data)]
    for f in intent["files"]:  # the same value twice: staged twice, from the one spool file
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
        assert open(f["source"], "rb").read() == data
    ((key, kind, step, rows),) = run.rows
    assert (key, kind, step) == ("clip", "video", 3) and rows[0][1] == len(data)
    path = spooled.path
    del clip, spooled, out
    gc.collect()
    assert not os.path.exists(path)  # the spool copy went with the value
    fake = tmp_path / "fake.gif"
    fake.write_bytes(os.urandom(2 << 20))
    with pytest.raises(ValueError, match="first bytes do not match"):
        cohort.Video(str(fake))
    gc.collect()
    # A refused value leaves no copy either (the owner file of a spool in the agent's staging
    # directory aside).
    assert [n for n in os.listdir(media._spool_dir()) if not n.startswith(".")] == []


def test_with_a_run_the_spool_is_in_the_agents_staging_directory_and_staging_links(
        tmp_path, monkeypatch):
    """With a current run, the spool directory is in the agent's staging directory (named ours:
    the agent deletes it if the process dies) and the worker hard-links the file into the set's
    staging directory: no second copy."""
    import os
    from cohort import media
    run = _MediaRun(tmp_path / "staging")
    os.makedirs(run._artifact_staging_dir)
    monkeypatch.setattr(cohort, "run", run)
    monkeypatch.setattr(media, "_spool_root", None)
    big = tmp_path / "clip.mp4"
    big.write_bytes(b"\0\0\0\x18ftypmp42" + os.urandom(1 << 20))
    clip = cohort.Video(str(big))
    spool = os.path.dirname(clip._file.path)
    assert os.path.dirname(spool) == run._artifact_staging_dir
    assert os.path.exists(os.path.join(spool, ".owner"))
    out = media._hand_over(run, [("clip", media.media_set("clip", clip), 0)])
    assert [e for _, _, e in out] == [None]
    (staged,) = run.intents[0]["files"]
    assert os.stat(staged["source"]).st_ino == os.stat(clip._file.path).st_ino  # a link
    assert open(staged["source"], "rb").read() == big.read_bytes()


def test_spooled_values_copy_share_their_file_refuse_pickling_and_forks_spool_apart(tmp_path):
    import copy
    import os
    import pickle
    from cohort import media
    big = tmp_path / "clip.gif"
    big.write_bytes(b"GIF89a" + os.urandom(1 << 20))
    clip = cohort.Video(str(big))
    assert copy.deepcopy(clip)._file is clip._file  # one file, removed once, when all are gone
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(clip)
    parent_spool = media._spool_dir()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a spool of its own, not under the parent's directory
        try:
            child_clip = cohort.Video(str(big))
            os.write(write, os.path.dirname(child_clip._file.path).encode())
        finally:
            os._exit(0)
    os.close(write)
    child_spool = os.read(read, 4096).decode()
    os.waitpid(pid, 0)
    assert child_spool and child_spool != parent_spool, (child_spool, parent_spool)
    assert os.path.exists(clip._file.path)  # the child's exit took nothing of the parent's
