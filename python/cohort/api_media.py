"""Media of a run through the read API (docs/python-api.md, "Media"): ``Run.media(key)`` and
``Run.table(key)``, over ``GET .../media``, ``.../media/{sha256}`` and ``.../tables/{key}``."""
from __future__ import annotations

import hashlib
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union
from urllib.parse import quote

from .api_http import NotFound, Transport, list_param
from .api_warnings import Skipped
from .errors import UsageError

_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
               "image/webp": ".webp", "image/bmp": ".bmp", "audio/wav": ".wav",
               "audio/mpeg": ".mp3", "audio/ogg": ".ogg", "audio/flac": ".flac",
               "audio/mp4": ".m4a", "video/mp4": ".mp4", "video/webm": ".webm",
               "video/ogg": ".ogv", "video/quicktime": ".mov", "text/html": ".html",
               "application/json": ".json"}


def _safe_segment(segment: str, escaped: bool = False) -> str:
    """One segment of a key or label as a file name that cannot leave its directory: '%' is
    written ``%25``, and a segment that is empty, ``.`` or ``..`` (a key such as ``a//b``,
    ``/abs`` or ``../x``; keys allow them) is written ``%``, ``%2E`` or ``%2E%2E``. Distinct
    segments stay distinct (``%`` alone and ``%2E`` come from nothing else). `escaped`: '%'
    is already written ``%25``."""
    if not escaped:
        segment = segment.replace("%", "%25")
    return {"": "%", ".": "%2E", "..": "%2E%2E"}.get(segment, segment)


class MediaFile(dict):
    """One media row (a dict: key, writer, step, index, time_ms, type, mime, sha256, size,
    caption, uploaded, url, and width/height/duration_ms or, for tables, nrows/ncols) that can
    fetch its bytes."""

    def __init__(self, t: Transport, row: Dict[str, Any]) -> None:
        super().__init__(row)
        self._t = t

    @property
    def filename(self) -> str:
        """``<key>/<writer>/<step>_<index><ext>``, relative: the key's slashes are directories,
        every segment made safe by `_safe_segment` (a key such as ``../x`` or ``/abs`` stays
        under the download root) and the writer label one segment (its slashes encoded)."""
        ext = _EXTENSIONS.get(self["mime"], "")
        key = "/".join(_safe_segment(s) for s in str(self["key"]).split("/"))
        writer = _safe_segment(str(self["writer"]).replace("%", "%25").replace("/", "%2F"),
                               escaped=True)
        return f"{key}/{writer}/{int(self['step'])}_{int(self['index'])}{ext}"

    def read(self) -> bytes:
        """The bytes, checked against the row's SHA-256 (VerificationError otherwise)."""
        resp = self._t.stream(self._path())
        data = resp.read()
        if hashlib.sha256(data).hexdigest() != self["sha256"]:
            from .artifact_download import VerificationError
            raise VerificationError(f"media {self['key']} step {self['step']}: the bytes do not "
                                    f"match their sha256 {self['sha256']}")
        return data

    def download(self, root: str = ".") -> str:
        """Writes the bytes to ``root/<filename>`` (always under `root`) and returns that
        path."""
        path = os.path.join(root, *self.filename.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = self.read()
        tmp = path + ".part"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return path

    def _path(self) -> str:
        return self["url"]  # /api/v1/runs/...: the server's path, under the transport's base


class MediaNotUploadedWarning(UserWarning):
    """``MediaList.download`` skipped files whose blobs the server does not hold yet."""


class MediaList(List[MediaFile]):
    """The rows of ``Run.media``: a list with ``download(root)`` and ``to_dataframe()``."""

    def download(self, root: str = ".") -> List[str]:
        """Downloads every file under `root` (``<key>/<writer>/<step>_<index><ext>``, see
        ``MediaFile.filename``) and returns their paths. A row whose blob the server does not
        hold yet (the node agent uploads media after the rows: a read right after the writing
        run's ``finish()``) is skipped and the others are still fetched, as ``cohort media get``
        does; one ``MediaNotUploadedWarning`` then says how many were skipped and names the
        first few: calling ``download`` again on a fresh ``Run.media(...)`` later fetches them
        (files already there are rewritten, the same bytes)."""
        paths, missing = [], []
        for m in self:
            try:
                paths.append(m.download(root))
            except NotFound as e:
                if m.get("uploaded") and "not uploaded yet" not in str(e):
                    raise
                missing.append(m)
        if missing:
            names = ", ".join(f"{m['key']} step {m['step']} index {m['index']}"
                              for m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            warnings.warn(
                f"cohort: media download to {root}: {len(missing)} of {len(self)} files are not "
                f"uploaded to the server yet and were skipped ({names}{more}); the node agent "
                f"uploads them after the run's rows: download again later (a new "
                f"Run.media(...).download) to fetch them. The other {len(paths)} files were "
                f"written.", MediaNotUploadedWarning, stacklevel=2)
        return paths

    def to_dataframe(self):
        import pandas as pd
        return pd.DataFrame([dict(m) for m in self])


def media(t: Transport, run_path: str, key: Union[str, Sequence[str], None],
          writers: Optional[Sequence[str]], min_step: Optional[int],
          max_step: Optional[int]) -> MediaList:
    keys = [key] if isinstance(key, str) else list(key or [])
    skipped = Skipped(run_path)  # rows the server had to leave out: warned, once each
    return MediaList(MediaFile(t, r) for r in _rows(t, run_path, keys, list(writers or []),
                                                    min_step, max_step, skipped))


def _query(t: Transport, run_path: str, keys: Sequence[str], writers: Sequence[str],
           min_step: Optional[int], max_step: Optional[int], skipped: Skipped):
    """One answer of ``GET .../media``: (rows, truncated: more rows matched than it holds)."""
    q: Dict[str, Any] = {"keys": list_param(keys), "writers": list_param(writers),
                         "min_step": min_step, "max_step": max_step}
    answer = t.get(run_path + "/media", q)
    skipped.note(answer)
    return answer["media"], bool(answer.get("truncated"))


def _rows(t: Transport, run_path: str, keys: List[str], writers: List[str],
          min_step: Optional[int], max_step: Optional[int],
          skipped: Skipped) -> List[Dict[str, Any]]:
    """Every matching row. One answer holds at most the server's row limit (100,000) and says
    when more matched (``truncated``); its rows are ordered by key, writer, step and index, so
    each (key, writer) pair before the last row's is whole there. That pair, and every other
    pair of ``.../keys`` that the filters take, are then read pair by pair (_pair_rows)."""
    rows, truncated = _query(t, run_path, keys, writers, min_step, max_step, skipped)
    if not truncated:
        return rows
    last = (rows[-1]["key"], rows[-1]["writer"])
    whole = {(r["key"], r["writer"]) for r in rows} - {last}
    out = [r for r in rows if (r["key"], r["writer"]) != last]
    out += _pair_rows(t, run_path, last, [r for r in rows if (r["key"], r["writer"]) == last],
                      min_step, max_step, skipped)
    lo = -2 ** 63 if min_step is None else min_step
    hi = 2 ** 63 - 1 if max_step is None else max_step
    rest = sorted({(k["key"], k["writer"]) for k in t.get(run_path + "/keys")["keys"]
                   if k.get("type") in ("image", "audio", "video", "html", "table")
                   and (not keys or k["key"] in keys) and (not writers or k["writer"] in writers)
                   and k.get("max_step", hi) >= lo and k.get("min_step", lo) <= hi}
                  - whole - {last})
    for pair in rest:
        out += _pair_rows(t, run_path, pair, [], min_step, max_step, skipped)
    return out


def _pair_rows(t: Transport, run_path: str, pair, have: List[Dict[str, Any]],
               min_step: Optional[int], max_step: Optional[int],
               skipped: Skipped) -> List[Dict[str, Any]]:
    """The rows of one (key, writer) pair, after `have` (its first rows, in order): each query
    starts at the last step received (whose rows may have been cut) and its rows of that step
    already received are left out, until an answer is not truncated. An answer that ends in
    the step it started at is followed by a query of that step alone: truncated too, the step
    holds more rows than the server's limit and the route pages by step only: UsageError,
    rather than rows missing."""
    key, writer = pair
    out = list(have)

    def add(got: List[Dict[str, Any]], step: Optional[int]) -> None:
        seen = {r["index"] for r in out if r["step"] == step}
        out.extend(r for r in got if not (r["step"] == step and r["index"] in seen))

    start = out[-1]["step"] if out else min_step
    while True:
        got, truncated = _query(t, run_path, [key], [writer], start, max_step, skipped)
        add(got, start)
        if not truncated:
            return out
        if got[-1]["step"] != start:
            start = got[-1]["step"]
            continue
        # The answer ended in the step it began at: that step alone says whether it is whole.
        got, truncated = _query(t, run_path, [key], [writer], start, start, skipped)
        if truncated:
            raise UsageError(f"media: key {key!r} of writer {writer!r} holds more rows at step "
                             f"{start} than the server answers at once ({len(got)}), and its "
                             f"media route cannot page within a step: these rows cannot all "
                             f"be read")
        add(got, start)
        if max_step is not None and start >= max_step:
            return out
        start += 1


def table(t: Transport, run_path: str, key: str, step: Optional[int],
          writer: Optional[str], page_size: int = 10000):
    """The table logged under `key` (at `step`, default the latest) as a pandas DataFrame; its
    rows are read page by page."""
    import pandas as pd
    if not isinstance(key, str) or not key:
        raise UsageError("table: key must be a non-empty str")
    path = run_path + "/tables/" + quote(key, safe="/")
    offset, columns, rows = 0, None, []
    while True:
        page = t.get(path, {"step": step, "offset": offset, "limit": page_size,
                            "writers": writer})
        columns = page["columns"]
        rows.extend(page["data"])
        offset += len(page["data"])
        if offset >= page["nrows"] or not page["data"]:
            break
        step = page["step"]  # the same document for every page
    _special_floats(rows, len(columns))
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs.update({"key": key, "step": page["step"], "writer": page["writer"]})
    return frame


_SPECIAL = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def _special_floats(rows: List[List[Any]], ncols: int) -> None:
    """Turns the strings ``"Infinity"``, ``"-Infinity"`` (how ``cohort.Table`` stores infinite
    cells: JSON has no such numbers) and ``"NaN"`` back into floats, in place, in each column
    whose other cells are all numbers or None; a column that also holds other strings is text,
    and keeps them as they are."""
    for j in range(ncols):
        cells = [r[j] for r in rows if j < len(r)]
        if not any(isinstance(c, str) and c in _SPECIAL for c in cells):
            continue
        if all(c is None or (isinstance(c, str) and c in _SPECIAL)
               or (isinstance(c, (int, float)) and not isinstance(c, bool)) for c in cells):
            for r in rows:
                if j < len(r) and isinstance(r[j], str):
                    r[j] = _SPECIAL[r[j]]
