"""The columnar answer of a raw history read (docs/formats.md, "History columns"), read with
numpy without copying the columns: ``GET .../history`` with
``Accept: application/vnd.cohort.columns``. Used by ``cohort.Api`` when numpy is installed
(api_history.py); JSON otherwise. A runs listing's columns ("Run list columns": the same
preamble, a ``"table"`` header) are read by ``decode_table``.

Layout (little-endian): ``b"CHCL"``, u32 version (1), u32 header length H, u32 CRC-32C of every
byte after these 16; the header (UTF-8 JSON: ``{"series": [{"key", "writer", "points",
"more"}], "warnings"?: [...]}``) zero-padded to a multiple of 8; then per series, in header
order, ``points`` int64 steps, ``points`` int64 times (ms), ``points`` float64 values.
"""
from __future__ import annotations

import json
import struct
from typing import Any, Dict, List, NamedTuple, Tuple

from ._native import native
from .errors import CommError

MEDIA_TYPE = "application/vnd.cohort.columns"
# Columns when the server has them, JSON otherwise (bucketed reads; an older server).
ACCEPT = MEDIA_TYPE + ", application/json;q=0.5"
VERSION = 1
_PREAMBLE = struct.Struct("<4sIII")


def available() -> bool:
    """Whether numpy (which reads the columns) can be imported."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


class Columns(NamedTuple):
    """One series of a columnar answer; the arrays are read-only views of the answer."""
    key: str
    writer: str
    more: bool
    steps: Any   # numpy int64
    times: Any   # numpy int64 (ms since the epoch)
    values: Any  # numpy float64


def _preamble(body: bytes) -> Tuple[Dict[str, Any], int, int]:
    """(the header, its length, where the arrays start) of a columnar body, checked."""
    if len(body) < _PREAMBLE.size:
        raise CommError("history columns: answer cut short")
    magic, version, header_len, crc = _PREAMBLE.unpack_from(body)
    if magic != b"CHCL":
        raise CommError("history columns: not a columnar answer (no magic)")
    if version != VERSION:
        raise CommError(f"history columns: version {version} (this client reads {VERSION})")
    if native._crc32c(body, _PREAMBLE.size) != crc:
        raise CommError("history columns: checksum mismatch (damaged answer)")
    at = _PREAMBLE.size + (header_len + 7) // 8 * 8
    if at > len(body):
        raise CommError("history columns: header cut short")
    try:
        header = json.loads(body[_PREAMBLE.size:_PREAMBLE.size + header_len])
    except ValueError as e:
        raise CommError(f"history columns: bad header: {e}") from e
    return header, header_len, at


def decode(body: bytes) -> Tuple[Dict[str, Any], List[Columns]]:
    """(the header, its series with their columns) of a columnar body; CommError when the
    body is not one (damaged, cut short, another version)."""
    import numpy as np

    header, _, at = _preamble(body)
    try:
        listed = [(str(s["key"]), str(s["writer"]), bool(s["more"]), int(s["points"]))
                  for s in header["series"]]
    except (ValueError, TypeError, KeyError) as e:
        raise CommError(f"history columns: bad header: {e}") from e
    out: List[Columns] = []
    for key, writer, more, n in listed:
        if n < 0 or at + 24 * n > len(body):
            raise CommError("history columns: columns cut short")
        steps = np.frombuffer(body, dtype="<i8", count=n, offset=at)
        times = np.frombuffer(body, dtype="<i8", count=n, offset=at + 8 * n)
        values = np.frombuffer(body, dtype="<f8", count=n, offset=at + 16 * n)
        at += 24 * n
        out.append(Columns(key, writer, more, steps, times, values))
    if at != len(body):
        raise CommError("history columns: bytes after the columns")
    return header, out


def _pad8(n: int) -> int:
    return (n + 7) // 8 * 8


def decode_table(body: bytes) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the header, its columns by name in order) of a runs listing's columnar body
    (docs/formats.md "Run list columns"): each column as pandas builds it from the JSON
    answer's rows: int64/float64/bool arrays when every row has the field (int64 and bool
    with a missing row become float64 with NaN and objects), objects otherwise; JSON-typed
    cells decoded. CommError when the body is not one."""
    import numpy as np

    header, _, at = _preamble(body)
    try:
        n = int(header["table"]["rows"])
        listed = [(str(c["name"]), str(c["type"])) for c in header["table"]["columns"]]
    except (ValueError, TypeError, KeyError) as e:
        raise CommError(f"run list columns: bad header: {e}") from e
    out: Dict[str, Any] = {}

    def take(size: int) -> int:
        nonlocal at
        start = at
        at += _pad8(size)
        if at > len(body):
            raise CommError("run list columns: columns cut short")
        return start

    for name, kind in listed:
        present = np.frombuffer(body, dtype=np.uint8, count=n, offset=take(n)).astype(bool)
        full = bool(present.all())
        if kind in ("i64", "f64"):
            values = np.frombuffer(body, dtype="<i8" if kind == "i64" else "<f8", count=n,
                                   offset=take(8 * n))
            if full:
                out[name] = values
            else:
                col = values.astype(np.float64)
                col[~present] = np.nan
                out[name] = col
        elif kind == "bool":
            values = np.frombuffer(body, dtype=np.uint8, count=n, offset=take(n)).astype(bool)
            out[name] = values if full else [bool(v) if p else np.nan
                                             for v, p in zip(values, present)]
        elif kind in ("text", "json"):
            offsets = np.frombuffer(body, dtype="<u4", count=n + 1, offset=take(4 * (n + 1)))
            size = int(offsets[-1]) if n >= 0 else 0
            start = take(size)
            raw = body[start:start + size]
            cells: List[Any] = []
            for i in range(n):
                if not present[i]:
                    cells.append(np.nan)
                    continue
                text = raw[offsets[i]:offsets[i + 1]].decode("utf-8")
                cells.append(text if kind == "text" else json.loads(text))
            out[name] = cells
        else:
            raise CommError(f"run list columns: column {name!r} has unknown type {kind!r}")
    if at != len(body):
        raise CommError("run list columns: bytes after the columns")
    return header, out
