"""Media of a run through the read API (docs/python-api.md, "Media"): ``Run.media(key)`` and
``Run.table(key)``, over ``GET .../media``, ``.../media/{sha256}`` and ``.../tables/{key}``."""
from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, List, Optional, Sequence, Union
from urllib.parse import quote

from .api_http import Transport
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


class MediaList(List[MediaFile]):
    """The rows of ``Run.media``: a list with ``download(root)`` and ``to_dataframe()``."""

    def download(self, root: str = ".") -> List[str]:
        """Downloads every file under `root` (``<key>/<writer>/<step>_<index><ext>``, see
        ``MediaFile.filename``)."""
        return [m.download(root) for m in self]

    def to_dataframe(self):
        import pandas as pd
        return pd.DataFrame([dict(m) for m in self])


def media(t: Transport, run_path: str, key: Union[str, Sequence[str], None],
          writers: Optional[Sequence[str]], min_step: Optional[int],
          max_step: Optional[int]) -> MediaList:
    keys = [key] if isinstance(key, str) else list(key or [])
    q: Dict[str, Any] = {"keys": ",".join(keys), "writers": ",".join(writers or []),
                         "min_step": min_step, "max_step": max_step}
    rows = t.get(run_path + "/media", q)["media"]
    return MediaList(MediaFile(t, r) for r in rows)


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
    frame = pd.DataFrame(rows, columns=columns)
    frame.attrs.update({"key": key, "step": page["step"], "writer": page["writer"]})
    return frame
