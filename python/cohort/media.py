"""Media values for ``run.log``: ``cohort.Image``, ``Audio``, ``Video``, ``Html`` and ``Table``
(docs/python.md, "Media").

A media value is checked when it is made (shape, dtype, range, file type, table shape: a
ValueError naming the problem, and ``run.log`` names the key), and encoded (PNG with Pillow, WAV
with the standard library's ``wave``, tables as JSON) and hashed (SHA-256) later, on a worker
thread of this process: the training thread pays for a copy of the data (a file's bytes are read
when the value is made), not for the encoding.
The worker (its queue: _media_worker.py) writes each encoded file into the node agent's staging
directory and hands it over as a media intent (the agent uploads the blob to the server's blob
store, as it does artifact files); then it logs the rows (key, step, index, type, MIME type,
size, digest, ...) that the run's next batch carries. Its queue is bounded: when the encoding
falls behind, ``run.log`` waits for room (counted in ``stats()["waits"]``, with a warning),
nothing is dropped.

numpy, torch, PIL and pandas are looked up in ``sys.modules`` or imported when a value needs
them, never at ``import cohort``.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import math
import numbers
import os
import shutil
import sys
import tempfile
import threading
import uuid
import warnings
import wave
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _media_worker
# The worker's, importable from here as before it had a module of its own (``stats()`` is
# documented: docs/python.md).
from ._media_worker import MAX_SETS_PER_INTENT, drain, stats  # noqa: F401
from ._media_encode import Ahead

#: Caption bytes (core/limits.h kMaxMediaCaptionBytes).
MAX_CAPTION_BYTES = 4096

_IMAGE_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp", ".bmp": "image/bmp"}
_AUDIO_MIME = {".wav": "audio/wav", ".mp3": "audio/mpeg", ".ogg": "audio/ogg",
               ".flac": "audio/flac", ".m4a": "audio/mp4"}
_VIDEO_MIME = {".mp4": "video/mp4", ".webm": "video/webm", ".ogv": "video/ogg",
               ".ogg": "video/ogg", ".gif": "image/gif", ".mov": "video/quicktime"}
# The first bytes of each kind of file (a file that does not start so is refused).
_MAGIC = {"image/png": [b"\x89PNG\r\n\x1a\n"], "image/jpeg": [b"\xff\xd8\xff"],
          "image/gif": [b"GIF87a", b"GIF89a"], "image/bmp": [b"BM"],
          "audio/wav": [b"RIFF"], "audio/flac": [b"fLaC"], "audio/ogg": [b"OggS"],
          "video/ogg": [b"OggS"], "video/webm": [b"\x1a\x45\xdf\xa3"]}


def _caption(caption: Any, what: str) -> str:
    if caption is None:
        return ""
    if not isinstance(caption, str):
        caption = str(caption)
    if len(_utf8(caption, f"{what}: caption")) > MAX_CAPTION_BYTES:
        raise ValueError(f"{what}: caption longer than {MAX_CAPTION_BYTES} bytes")
    return caption


def _utf8(text: str, what: str) -> bytes:
    """`text` as UTF-8; a lone surrogate (which no UTF-8 text holds) raises ValueError naming
    `what` at the call, not on the worker thread that stores it."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what}: not valid text ({e.reason} at index {e.start})") from None


# A media file of this size or more is copied into a spool file when the value is made rather
# than read into memory: values wait in the worker's queue, and a video can be hundreds of MB.
_SPOOL_MIN_BYTES = 1 << 20
_spool_root: Optional[str] = None
_spool_lock = threading.Lock()
_spool_roots: List[Tuple[str, int]] = []  # (directory, pid of the process that made it)


def _spool_dir() -> str:
    """This process's private spool directory (0700, made on first use, removed at exit): in the
    node agent's staging directory when a run is current (the worker then hard-links the files
    into the set's staging directory: no copy; named ours, so that the agent deletes it if this
    process dies), else in the system's temporary directory."""
    global _spool_root
    with _spool_lock:
        if _spool_root is None or not os.path.isdir(_spool_root):
            current = getattr(sys.modules.get("cohort"), "run", None)
            staging = getattr(current, "_artifact_staging_dir", None) or None
            root = None
            if staging and os.path.isdir(staging):
                with contextlib.suppress(OSError):
                    root = tempfile.mkdtemp(prefix="spool-", dir=staging)
                    from .artifacts import _write_owner
                    _write_owner(root)
                if root and not os.path.isfile(os.path.join(root, ".owner")):
                    # Not named ours (no /proc, a full disk): the agent would keep it forever
                    # after a crash. The temporary directory instead.
                    shutil.rmtree(root, ignore_errors=True)
                    root = None
            _spool_root = root or tempfile.mkdtemp(prefix="cohort-media-spool-")
            _spool_roots.append((_spool_root, os.getpid()))
        return _spool_root


def _remove_spool_dirs() -> None:
    pid = os.getpid()
    for path, owner in _spool_roots:
        if owner == pid:  # not a forked child's exit: those are its parent's
            shutil.rmtree(path, ignore_errors=True)


# Registered when the module is imported, before cohort.init registers the exit handler that
# finishes the runs and drains the media queue: atexit runs the last registered first, so the
# spool goes only after the queued values were staged.
atexit.register(_remove_spool_dirs)


def _after_fork_in_child() -> None:
    global _spool_root, _spool_lock
    _spool_root = None  # the parent's spool directory goes with the parent: a spool of its own
    _spool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _unlink_spooled(path: str, pid: int) -> None:
    if os.getpid() == pid:
        with contextlib.suppress(OSError):
            os.unlink(path)


class _Spooled:
    """The bytes of a media file copied into a private spool file when the value was made, for
    files of _SPOOL_MIN_BYTES or more: what the value logs, whatever happens to the file
    afterwards, without holding it in memory. The copy is the kernel's (no bytes through Python);
    the SHA-256 is the worker's, off the training thread (`digest`). The copy is removed when the
    value is gone (not at exit: _remove_spool_dirs does, after the queue is drained); the worker
    links or copies it into the agent's staging directory. Copies of a value share it; it cannot
    be pickled."""

    __slots__ = ("path", "size", "head", "_sha256", "__weakref__")

    def __init__(self, src: str) -> None:
        fd, self.path = tempfile.mkstemp(prefix="media-", dir=_spool_dir())
        os.close(fd)
        weakref.finalize(self, _unlink_spooled, self.path, os.getpid()).atexit = False
        shutil.copyfile(src, self.path)
        self.size = os.path.getsize(self.path)
        with open(self.path, "rb") as f:
            self.head = f.read(64)
        self._sha256: Optional[str] = None

    def digest(self) -> str:
        """SHA-256 of the copy (computed once, by the worker)."""
        if self._sha256 is None:
            from .artifacts import _hash_file
            self._sha256 = _hash_file(self.path, None)["sha256"]
        return self._sha256

    def __copy__(self) -> "_Spooled":
        return self  # never changes: one file for all copies of the value

    def __deepcopy__(self, memo: Dict[int, Any]) -> "_Spooled":
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a media value made from a file of 1 MiB or more cannot be pickled: "
                        "make it (from the path) in the process that logs it")

    def stage_to(self, path: str) -> None:
        """Puts the bytes at `path`: a hard link to the spool file where the file systems allow
        (it is never written again), else a copy (streamed, not read into memory)."""
        try:
            os.link(self.path, path)
        except OSError:
            shutil.copyfile(self.path, path)


def _media_size(data: Any) -> int:
    return data.size if isinstance(data, _Spooled) else len(data)


def _read_path(path: Any, what: str, mimes: Dict[str, str], fmt: Optional[str] = None
               ) -> Tuple[str, Any]:
    """(MIME type, bytes) of a media file, checked: it exists, its extension (or
    `fmt`) is a known kind, and its first bytes are that kind's. The bytes are read here, when
    the value is made: a script that writes its next figure to the same file right after
    ``run.log`` must not change what this step logged (the worker encodes later). A file of
    _SPOOL_MIN_BYTES or more is copied into a spool file instead (a _Spooled, not bytes)."""
    p = os.path.abspath(os.fspath(path))
    if not os.path.isfile(p):
        raise ValueError(f"{what}: {p!r} is not a file")
    ext = "." + fmt.lower().lstrip(".") if fmt else os.path.splitext(p)[1].lower()
    mime = mimes.get(ext)
    if mime is None:
        raise ValueError(f"{what}: {p!r}: unsupported file type {ext or '(none)'!r}; expected "
                         f"one of {', '.join(sorted(mimes))}")
    magic = _MAGIC.get(mime)

    def check(head: bytes) -> None:
        if magic and not any(head.startswith(m) for m in magic):
            raise ValueError(f"{what}: {p!r} is not a {mime} file (its first bytes do not match)")
    data: Any
    if os.path.getsize(p) >= _SPOOL_MIN_BYTES:
        with open(p, "rb") as f:
            check(f.read(64))  # before a copy of a large file of the wrong kind
        data = _Spooled(p)
        check(data.head)  # what is logged: the copy
    else:
        with open(p, "rb") as f:
            data = f.read()
        check(data)
    return mime, data


def _as_numpy(value: Any) -> Any:
    """numpy array of a torch tensor or array-like (a copy: the caller may change the original
    before the worker encodes it)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().to("cpu").numpy().copy()
    import numpy as np
    return np.array(value, copy=True)


class _Media:
    """Base of the media types: what the log path and the worker need."""
    _cohort_media_type = ""
    caption = ""

    def _encode(self) -> Tuple[Any, str, int, int, int]:
        """(bytes, MIME type, width, height, duration_ms): on the worker thread. The bytes of a
        large file are a _Spooled copy of it, not bytes."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<cohort.{type(self).__name__}{' ' + repr(self.caption) if self.caption else ''}>"


class Image(_Media):
    """An image: a numpy array or torch tensor (HW grey, HWC or CHW with 1, 3 or 4 channels;
    uint8, bool, int 0..255, or float: 0..1 scaled by 255, 0..255 cast as wandb does, with
    negatives stretched from min..max; see ``_float_pixels``), a PIL image, or the path of a PNG, JPEG, GIF, WebP or BMP file
    (logged as it is). Arrays are encoded as PNG with Pillow (``mode``: converted to L, LA, RGB
    or RGBA first). The arguments are the seed SDK's (``Image(data, mode=None, caption=None)``);
    its annotations (``boxes``, ``masks``, ``classes``) are accepted and not stored yet."""
    _cohort_media_type = "image"

    # The seed SDK's annotations (boxes, masks, classes, ...) are not stored yet.
    _IGNORED = ("grouping", "classes", "boxes", "masks", "file_type", "normalize")

    def __init__(self, data_or_path: Any, mode: Optional[str] = None,
                 caption: Optional[str] = None, **ignored: Any) -> None:
        unknown = set(ignored) - set(self._IGNORED)
        if unknown:
            raise TypeError(f"Image: unexpected argument(s) {', '.join(sorted(unknown))}")
        if any(v is not None for v in ignored.values()):
            warnings.warn(f"cohort.Image: {', '.join(sorted(ignored))} not stored (the image "
                          "is)", RuntimeWarning, stacklevel=2)
        if mode is not None and mode not in ("L", "LA", "RGB", "RGBA"):
            raise ValueError(f"Image: mode {mode!r}: expected L, LA, RGB or RGBA")
        self.caption = _caption(caption, "Image")
        self._file: Any = None  # a file's bytes (or _Spooled copy), read when the value is made
        self._mime = "image/png"
        self._pil = None
        self._array = None
        self._mode = mode
        if isinstance(data_or_path, (str, os.PathLike)):
            self._mime, self._file = _read_path(data_or_path, "Image", _IMAGE_MIME)
            return
        # A PIL image (PIL.Image is imported: its class made the value; the worker thread may be
        # importing it for the first time meanwhile, so the module is not peeked at otherwise).
        pil_class = getattr(sys.modules.get("PIL.Image"), "Image", None) if type(
            data_or_path).__module__.startswith("PIL.") else None
        if isinstance(pil_class, type) and isinstance(data_or_path, pil_class):
            self._pil = data_or_path.copy()
            self.width, self.height = self._pil.size
            if self._pil.mode == "I":  # 32-bit integers: PNG holds 16 (converted on the worker)
                lo, hi = self._pil.getextrema()
                if lo < 0 or hi > 65535:
                    raise ValueError(f"Image: a PIL image of mode I with pixels {lo}..{hi}: PNG "
                                     "holds 0..65535; scale it first")
            return
        self._array = self._check_array(_as_numpy(data_or_path))
        self.height, self.width = int(self._array.shape[0]), int(self._array.shape[1])

    @staticmethod
    def _check_array(a: Any) -> Any:
        import numpy as np
        if a.ndim == 3 and a.shape[-1] not in (1, 3, 4) and a.shape[0] in (1, 3, 4):
            a = np.ascontiguousarray(a.transpose(1, 2, 0))  # CHW -> HWC
        if a.ndim == 3 and a.shape[-1] == 1:
            a = a[:, :, 0]
        if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[-1] not in (3, 4)):
            raise ValueError(f"Image: expected HW, HWC or CHW with 1, 3 or 4 channels, got shape "
                             f"{tuple(a.shape)}")
        if a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(f"Image: empty image of shape {tuple(a.shape)}")
        kind = a.dtype.kind
        if kind == "b":
            return a.astype(np.uint8) * 255
        if a.dtype == np.uint8:
            return a
        if kind in "iu":
            lo, hi = int(a.min()), int(a.max())
            if lo < 0 or hi > 255:
                raise ValueError(f"Image: integer pixels must be 0..255, got {lo}..{hi} "
                                 f"(dtype {a.dtype}): scale them to 0..255 (a uint16 image: "
                                 f"arr // 257) or clip them, then pass arr.astype(np.uint8)")
            return a.astype(np.uint8)
        if kind == "f":
            return Image._float_pixels(a)
        raise ValueError(f"Image: unsupported dtype {a.dtype}: pass uint8 (0..255), bool, int "
                         f"(0..255) or float pixels (0..1 or 0..255)")

    @staticmethod
    def _float_pixels(a: Any) -> Any:
        """Float pixels as the SDKs read them: all in [0, 1], scaled by 255 (on the worker: a
        float array is returned); in [0, 255] with some above 1, pixel values cast to uint8 as
        wandb 0.31 does (``astype(np.uint8)``: the fraction dropped); with negatives (a
        -1..1 image), min..max stretched to 0..1 first, as wandb's earlier SDKs did (0.31's
        cast would wrap them). NaN, infinities and values above 255 are refused."""
        import numpy as np
        lo, hi = float(a.min()), float(a.max())
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError("Image: float pixels must be finite (found NaN or infinity): "
                             "replace them first, e.g. np.nan_to_num(arr)")
        if lo < 0:
            a = a.astype(np.float64)
            return (a - lo) / (hi - lo) if hi > lo else np.zeros_like(a)
        if hi <= 1:
            return a  # scaled on the worker
        if hi <= 255:
            return a.astype(np.uint8)
        raise ValueError(f"Image: float pixels must be in [0, 1] (scaled by 255) or [0, 255], "
                         f"got {lo:g}..{hi:g}: divide by the maximum (arr / arr.max()) or "
                         f"pass np.clip(arr, 0, 255).astype(np.uint8)")

    def _encode(self) -> Tuple[Any, str, int, int, int]:
        if self._file is not None:
            data = self._file
            width = height = 0
            try:
                from PIL import Image as PILImage
                with PILImage.open(data.path if isinstance(data, _Spooled)
                                   else io.BytesIO(data)) as im:
                    width, height = im.size
            except Exception:  # noqa: BLE001 - sizes are optional for files
                pass
            return data, self._mime, width, height, 0
        try:
            from PIL import Image as PILImage
        except ImportError:
            raise RuntimeError("cohort.Image of an array needs Pillow (pip install Pillow)") from None
        if self._pil is not None:
            im = self._pil
            if im.mode == "I":
                im = im.convert("I;16")  # its range checked at the call
            elif im.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I;16"):
                im = im.convert("RGBA")
        else:
            import numpy as np
            a = self._array
            if a.dtype != np.uint8:
                a = np.rint(a.astype(np.float64) * 255.0).astype(np.uint8)
            im = PILImage.fromarray(a)
            if self._mode is not None and im.mode != self._mode:
                im = im.convert(self._mode)
        buf = io.BytesIO()
        im.save(buf, format="PNG", compress_level=3)
        return buf.getvalue(), "image/png", im.size[0], im.size[1], 0


class Audio(_Media):
    """Audio: a numpy array (samples, or samples x channels; float in [-1, 1] or int16) with
    its ``sample_rate``, encoded as 16-bit PCM WAV, or the path of a WAV, MP3, OGG, FLAC or M4A
    file (logged as it is)."""
    _cohort_media_type = "audio"

    def __init__(self, data_or_path: Any, sample_rate: Optional[int] = None,
                 caption: Optional[str] = None) -> None:
        self.caption = _caption(caption, "Audio")
        self._file: Any = None  # a file's bytes (or _Spooled copy), read when the value is made
        self._array = None
        self.sample_rate = sample_rate
        if isinstance(data_or_path, (str, os.PathLike)):
            self._mime, self._file = _read_path(data_or_path, "Audio", _AUDIO_MIME)
            return
        if sample_rate is None or isinstance(sample_rate, bool) or not isinstance(
                sample_rate, numbers.Integral) or not 1 <= int(sample_rate) <= 1_000_000:
            raise ValueError("Audio: an array needs sample_rate (an int, 1..1000000 Hz)")
        self.sample_rate = int(sample_rate)
        a = _as_numpy(data_or_path)
        if a.ndim == 2 and a.shape[0] <= 16 < a.shape[1]:
            a = a.T  # channels x samples
        if a.ndim not in (1, 2) or a.shape[0] == 0 or (a.ndim == 2 and not 1 <= a.shape[1] <= 16):
            raise ValueError(f"Audio: expected samples or samples x channels (1..16), got shape "
                             f"{tuple(a.shape)}")
        if a.dtype.kind == "f":
            lo, hi = float(a.min()), float(a.max())
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError("Audio: samples must be finite (found NaN or infinity)")
            if lo < -1 or hi > 1:
                raise ValueError(f"Audio: float samples must be in [-1, 1], got {lo:g}..{hi:g}")
        elif str(a.dtype) != "int16":
            raise ValueError(f"Audio: unsupported dtype {a.dtype} (float in [-1, 1] or int16)")
        self._array = a

    def _encode(self) -> Tuple[Any, str, int, int, int]:
        if self._file is not None:
            data = self._file
            duration = 0
            if self._mime == "audio/wav":
                try:
                    with wave.open(data.path if isinstance(data, _Spooled)
                                   else io.BytesIO(data)) as w:
                        duration = int(round(1000.0 * w.getnframes() / w.getframerate()))
                except Exception:  # noqa: BLE001 - a WAV wave cannot read: no duration
                    pass
            return data, self._mime, 0, 0, duration
        import numpy as np
        a = self._array
        if a.dtype.kind == "f":
            a = np.rint(np.clip(a, -1.0, 1.0) * 32767.0).astype("<i2")
        else:
            a = a.astype("<i2")
        channels = 1 if a.ndim == 1 else a.shape[1]
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(self.sample_rate)
            w.writeframes(np.ascontiguousarray(a).tobytes())
        duration = int(round(1000.0 * a.shape[0] / self.sample_rate))
        return buf.getvalue(), "audio/wav", 0, 0, duration


class Video(_Media):
    """A video file (MP4, WebM, OGG, GIF, MOV), logged as it is; ``format`` overrides the file's
    extension. Arrays of frames are not encoded here: write them to a file first."""
    _cohort_media_type = "video"

    def __init__(self, data_or_path: Any, caption: Optional[str] = None, fps: int = 4,
                 format: Optional[str] = None) -> None:
        self.caption = _caption(caption, "Video")
        self.fps = fps
        if not isinstance(data_or_path, (str, os.PathLike)):
            raise ValueError("Video: arrays of frames are not encoded by cohort; write them to a "
                             ".mp4 or .gif file (e.g. imageio.mimwrite(path, frames, fps=fps)) "
                             "and log cohort.Video(path)")
        self._mime, self._file = _read_path(data_or_path, "Video", _VIDEO_MIME, format)

    def _encode(self) -> Tuple[Any, str, int, int, int]:
        return self._file, self._mime, 0, 0, 0


class Html(_Media):
    """An HTML page: its text, or the path of a .html file. It is served sandboxed (it never
    runs in the UI's origin)."""
    _cohort_media_type = "html"

    def __init__(self, data: Any, inject: bool = True, caption: Optional[str] = None) -> None:
        self.caption = _caption(caption, "Html")
        if isinstance(data, os.PathLike) or (
                isinstance(data, str) and data.lower().endswith((".html", ".htm"))
                and "<" not in data):
            # A str that reads as a file name (no markup, a .html/.htm ending) is a path: one
            # that names no file is refused, as Image's is, rather than logged as the page.
            if not os.path.isfile(data):
                raise ValueError(f"Html: {os.path.abspath(os.fspath(data))!r} is not a file")
            with open(os.fspath(data), "rb") as f:
                self._bytes = f.read()
        elif isinstance(data, str):
            self._bytes = data.encode("utf-8")
        elif hasattr(data, "read"):
            text = data.read()
            self._bytes = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        else:
            raise ValueError(f"Html: expected HTML text or a path, got {type(data).__name__}")

    def _encode(self) -> Tuple[bytes, str, int, int, int]:
        return self._bytes, "text/html", 0, 0, 0


def _cell(v: Any, row: int, col: str) -> Any:
    if isinstance(v, str):
        _utf8(v, f"Table: row {row}, column {col!r}")
        return v
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, _Media):
        if isinstance(v, Table):
            raise ValueError(f"Table: row {row}, column {col!r}: a Table cannot be a cell")
        return v  # encoded with the table, on the worker thread (Table._encode)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isfinite(f):
            return f
        # JSON has no infinities: stored as the scalars' strings, read back as floats by
        # Run.table (api_media._special_floats); NaN is a missing cell (None).
        return None if math.isnan(f) else ("Infinity" if f > 0 else "-Infinity")
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.generic):
        return _cell(v.item(), row, col)
    raise ValueError(f"Table: row {row}, column {col!r}: a {type(v).__name__} cannot be a cell "
                     "(numbers, strings, booleans, None, or an Image, Audio, Video or Html)")


class Table(_Media):
    """A table: ``columns`` (names) and ``data`` (rows of cells: numbers, strings, booleans,
    None, or media: ``Image``, ``Audio``, ``Video``, ``Html``; NaN becomes None, infinities the
    strings ``"Infinity"``/``"-Infinity"``, floats again through ``Run.table``), or
    a pandas ``dataframe``. Stored as a JSON document ``{"columns": [...], "data": [[...], ...]}``
    whose media cells are ``{"_type": "image", "sha256", "size", "mime", "width", "height",
    "duration_ms", "caption"}``, their bytes blobs of their own (docs/formats.md "Tables"); read
    back with ``Run.table(key)`` (a media cell comes back as a dict of those fields and its
    ``url``)."""
    _cohort_media_type = "table"

    def __init__(self, columns: Optional[Sequence[Any]] = None,
                 data: Optional[Sequence[Sequence[Any]]] = None, rows: Any = None,
                 dataframe: Any = None, caption: Optional[str] = None) -> None:
        self.caption = _caption(caption, "Table")
        if data is None and rows is not None:
            data = rows
        if dataframe is not None:
            if data is not None:
                raise ValueError("Table: give data or dataframe, not both")
            columns = [str(c) for c in dataframe.columns]
            data = dataframe.itertuples(index=False, name=None)
        if data is None:
            data = []
        data = list(data)
        if columns is None:
            width = len(data[0]) if data else 0
            columns = [str(i) for i in range(width)]
        if isinstance(columns, str):
            raise ValueError("Table: columns must be a list of names, not a str")
        self.columns = [str(c) for c in columns]
        for c in self.columns:
            _utf8(c, "Table: a column name")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"Table: repeated column names in {self.columns}")
        out: List[List[Any]] = []
        n = len(self.columns)
        for i, row in enumerate(data):
            if isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
                raise ValueError(f"Table: row {i} is not a sequence of cells")
            if len(row) != n:
                raise ValueError(f"Table: row {i} has {len(row)} cells, expected {n} (one per "
                                 "column)")
            out.append([_cell(v, i, self.columns[j]) for j, v in enumerate(row)])
        self.data = out

    def _encode(self, stage: Optional[Callable[["_Media"], Dict[str, Any]]] = None
                ) -> Tuple[bytes, str, int, int, int]:
        """`stage` encodes a media cell, keeps its bytes for the agent and returns the cell's
        JSON object (the worker's; a table with media cells needs it)."""
        def cell(v: Any) -> Any:
            if not isinstance(v, _Media):
                return v
            if stage is None:
                raise ValueError("Table: media cells are encoded by the media worker")
            return stage(v)
        data = [[cell(v) for v in row] for row in self.data]
        text = json.dumps({"columns": self.columns, "data": data}, allow_nan=False,
                          separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8"), "application/json", len(self.columns), len(self.data), 0


class _MediaSet:
    """One key's media of one log call (the converter's answer for media values). ``sizes``:
    (how many, the largest file's size or -1 when none is known yet: arrays are encoded later),
    which the log call checks against the server's limits (``Run::CheckMediaSet``)."""

    def __init__(self, items: List[_Media]) -> None:
        self.items = items
        self._cohort_media_type = items[0]._cohort_media_type
        files = [_media_size(m._file) for m in items if getattr(m, "_file", None) is not None]
        self.sizes = (len(items), max(files, default=-1))


def _server_limits(run: Any) -> Tuple[int, int]:
    """(largest media file in bytes, media per step) that the server of `run` takes, as its
    answer to the writer's join said; 0 where not known (an offline run, no answer yet)."""
    limits = getattr(run, "_media_limits", None)
    if isinstance(limits, tuple) and len(limits) == 2:
        return int(limits[0]), int(limits[1])
    return 0, 0


def media_set(key: str, value: Any) -> Optional[_MediaSet]:
    """The media set of a logged value, None when it is not media. TypeError naming the key for
    a list that mixes media types. The log call then checks the set against the run's server's
    limits (its ``sizes``)."""
    if isinstance(value, _Media):
        return _MediaSet([value])
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], _Media):
        if not all(isinstance(v, _Media) for v in value):
            raise TypeError(f"log: key {key!r}: a list of media must hold media only")
        types = sorted({v._cohort_media_type for v in value})
        if len(types) > 1:
            raise TypeError(f"log: key {key!r}: a list of media must be of one type, got "
                            f"{', '.join(types)}")
        return _MediaSet(list(value))
    return None


# -- the worker (its queue: _media_worker.py) ----------------------------------------------------
class _Worker(_media_worker.Worker):
    """The process's media worker: encodes, hashes, stages and hands over media sets in the
    order they were logged (_hand_over)."""

    def hand_over(self, run: Any, sets: List[Tuple[str, _MediaSet, int]]
                  ) -> List[Tuple[str, int, Optional[BaseException]]]:
        return _hand_over(run, sets)


def sink(run: Any, key: str, mset: _MediaSet, step: int) -> None:
    """The extension's media sink: one key's set of one ``run.log`` call at `step` (or a
    histogram still to be computed: the histogram worker's)."""
    if getattr(run, "disabled", False):
        return
    if mset._cohort_media_type == "histogram":  # cohort.histogram._PendingLog
        from . import _histogram_worker
        _histogram_worker.put(run, key, mset, step)
        return
    _media_worker.get_worker(_Worker).put(run, key, mset, step)


def _hand_over(run: Any, sets: List[Tuple[str, _MediaSet, int]]
               ) -> List[Tuple[str, int, Optional[BaseException]]]:
    """Encodes and hashes the sets of one run, writes each file into a staging directory, hands
    the files to the agent (one media intent: it uploads their blobs), then logs each set's rows.
    Returns (key, step, error or None) per set: a set that cannot be encoded is left out."""
    if getattr(run, "_py_finished", False) and getattr(run, "_native_finished", False):
        raise RuntimeError("the run finished before its media were encoded")
    from .artifacts import _write_owner
    media_id = uuid.uuid4().hex
    max_file = _server_limits(run)[0]
    root = run._artifact_staging_dir or ""
    staging = os.path.join(root, media_id) if root else tempfile.mkdtemp(prefix="cohort-media-")
    handed = False
    out: List[Tuple[str, int, Optional[BaseException]]] = []
    ahead = Ahead([m for _, mset, _ in sets for m in mset.items if not isinstance(m, Table)])
    try:
        if root:
            os.makedirs(staging, mode=0o700, exist_ok=True)
            _write_owner(staging)
        files: List[Dict[str, Any]] = []
        encoded = []  # (key, set, step, rows) of the sets that encoded
        for j, (key, mset, step) in enumerate(sets):
            set_files: List[Dict[str, Any]] = []  # this set's: kept only when it all encodes

            def stage(data: Any, name: str) -> str:
                path = os.path.join(staging, name)
                if isinstance(data, _Spooled):
                    sha = data.digest()
                    data.stage_to(path)
                else:
                    sha = hashlib.sha256(data).hexdigest()
                    with open(path, "wb") as f:
                        f.write(data)
                set_files.append({"path": name, "sha256": sha, "size": _media_size(data),
                                  "source": path})
                return sha

            try:
                rows: List[Tuple[str, int, str, int, int, int, str, int]] = []
                for i, m in enumerate(mset.items):
                    cell_bytes = 0  # a table's: each distinct cell blob once (media budget)
                    if isinstance(m, Table):
                        cells: Dict[int, Dict[str, Any]] = {}

                        def stage_cell(c: _Media, i: int = i, cells: Any = cells) -> Dict[str, Any]:
                            if id(c) not in cells:  # one cell object in many rows: one file
                                cdata, cmime, w, h, dur = c._encode()
                                sha = stage(cdata, f"{j}-{i}-{len(cells)}")
                                cells[id(c)] = {"_type": c._cohort_media_type, "sha256": sha,
                                                "size": _media_size(cdata), "mime": cmime,
                                                "width": int(w), "height": int(h),
                                                "duration_ms": int(dur),
                                                "caption": c.caption or ""}
                            return cells[id(c)]
                        data, mime, width, height, duration_ms = m._encode(stage_cell)
                        cell_bytes = sum({c["sha256"]: c["size"] for c in cells.values()}.values())
                    else:
                        data, mime, width, height, duration_ms = ahead.get(m)
                    if max_file and _media_size(data) > max_file:
                        # An array's file, known once encoded: not sent to be refused (the server
                        # checks each row's own file; a table's cells count to the run's budget).
                        raise ValueError(f"item {i} is {_media_size(data)} bytes once encoded, "
                                         f"more than the server takes ({max_file}: its "
                                         "--max-media-file-bytes)")
                    sha = stage(data, f"{j}-{i}")
                    rows.append((sha, _media_size(data), mime, int(width), int(height),
                                 int(duration_ms), m.caption or "", cell_bytes))
                encoded.append((key, mset, step, rows))
                files.extend(set_files)
            except Exception as e:  # noqa: BLE001 - this set only
                for f in set_files:
                    with contextlib.suppress(OSError):
                        os.unlink(f["source"])
                out.append((key, step, e))
        if files:
            intent: Dict[str, Any] = {"id": media_id, "name": "media", "type": "media",
                                      "media": True, "files": files}
            if root:
                intent["staging"] = staging
            run._log_artifact_intent(json.dumps(intent))
            handed = True
        for key, mset, step, rows in encoded:
            try:
                run._log_media(key, mset._cohort_media_type, step, rows)
                out.append((key, step, None))
            except Exception as e:  # noqa: BLE001 - this set only
                out.append((key, step, e))
        return out
    finally:
        ahead.close()
        if not handed:
            shutil.rmtree(staging, ignore_errors=True)
