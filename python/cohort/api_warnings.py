"""What the server skipped, said to the reader of ``cohort.Api``: a history or system answer
may carry ``"warnings": [{"key", "writer", "min_step", "max_step", "points", "message"}]``
(docs/api.md "History": a stored chunk that failed its checksum is skipped, the rest answered;
an answer of several runs names each item's ``"run"``); the histogram, console, media and
rank-aggregate answers are read for one the same way. The data
read is then partial, so every read that gets such an answer emits a ``SkippedDataWarning`` (a
``UserWarning``) per distinct item, naming the run, the key and writer, the steps and points
left out, the server's reason and what to do; it points at the user's call (the first frame
outside this package), also for a generator read as it is iterated (``scan_history``).

One ``Skipped`` per user call: a read of many pages (or writers) meets the same damaged chunk
on each page that covers it, and says so once. Not thread-safe: a reader that reads on several
threads (``Api.history``) gives each thread its own with ``emit=False`` and emits what they
collected on the caller's thread (``flush``), where the warning can point at the caller.
"""
from __future__ import annotations

import os
import sys
import urllib.parse
import warnings
from typing import Any, List, Optional, Set

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class SkippedDataWarning(UserWarning):
    """The server left data out of an answer (a damaged stored chunk, skipped): what was read
    is partial."""


def _parts(path: str, prefix: str, n: int) -> List[str]:
    """The first `n` segments after `prefix` of an API path, unquoted ([] when it has fewer)."""
    if not path.startswith(prefix):
        return []
    parts = path[len(prefix):].split("/")
    return [urllib.parse.unquote(p) for p in parts[:n]] if len(parts) >= n else []


def read_label(path: str) -> str:
    """What a read of API path `path` reads, for a warning: ``run entity/project/run_id`` for
    ``/api/v1/runs/{entity}/{project}/{run_id}...``, ``project entity/project`` for a
    project's route (``/api/v1/groups/{entity}/{project}...``), the path otherwise."""
    run = _parts(path, "/api/v1/runs/", 3)
    if run:
        return "run " + "/".join(run)
    project = _parts(path, "/api/v1/groups/", 2)
    if project:
        return "project " + "/".join(project)
    return path


def _text(item: Any, label: str) -> str:
    """The warning for one item of an answer's ``warnings`` (a read of `label`)."""
    if not isinstance(item, dict):
        return (f"cohort: reading {label}: the server left data out of its answer: {item}. "
                "What was read is partial; see the server's log.")
    if item.get("run") and label.startswith(("run ", "project ")):
        # An answer of several runs: the item names its run (of the label's project).
        project = label.split(" ", 1)[1].split("/")[:2]
        label = "run " + "/".join(project + [str(item["run"])])
    key = item.get("key")
    system = isinstance(key, str) and key.startswith("system/")  # stepped by time (ms)
    what = []
    if item.get("points") is not None:
        what.append(f"{item['points']} point(s)")
    if system:
        what.append(f"of system metric {key[len('system/'):]!r}")
    elif key is not None:
        what.append(f"of {key!r}")
    if item.get("writer") is not None:
        what.append(f"(writer {item['writer']!r})")
    lo, hi = item.get("min_step"), item.get("max_step")
    if lo is not None and hi is not None:
        what.append(f"at times {lo}..{hi} (ms since the epoch)" if system
                    else f"at steps {lo}..{hi}")
    subject = " ".join(what) or "some data"
    message = item.get("message") or "no reason given"
    return (f"cohort: reading {label}: {subject} could not be read and are missing from "
            f"this result ({message}); the rest of it is complete. The server's stored copy "
            f"of them is damaged (the server's log names it once): restore its store from a "
            f"backup to read them again (docs/operations.md \"Backups\"), or leave those "
            f"{'times' if system else 'steps'} out of the read.")


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel, called from _warn, that names the first frame outside this
    package (the user's call)."""
    frame = sys._getframe(1)  # _warn's frame: stacklevel 1 of its warnings.warn
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def _warn(text: str) -> None:
    warnings.warn(SkippedDataWarning(text), stacklevel=_user_stacklevel())


class Skipped:
    """The warnings of one read of API path `path` (or of what `label` names, such as ``group
    G of project e/p``), each distinct one emitted once (`emit`), or collected for ``flush``
    (`emit=False`)."""

    def __init__(self, path: str, emit: bool = True, label: Optional[str] = None) -> None:
        self.label = label or read_label(path)
        self.emit = emit
        self._seen: Set[str] = set()
        self.pending: List[str] = []

    def note(self, answer: Any) -> None:
        """Warns of the ``warnings`` of `answer` (a JSON answer, or a columnar answer's header)
        not warned of yet by this read; nothing when it has none."""
        items = answer.get("warnings") if isinstance(answer, dict) else None
        if not items:
            return
        for item in items if isinstance(items, list) else [items]:
            text = _text(item, self.label)
            if text in self._seen:
                continue
            self._seen.add(text)
            if self.emit:
                _warn(text)
            else:
                self.pending.append(text)

    def flush(self) -> None:
        """Emits what was collected (`emit=False`), on the calling thread."""
        pending, self.pending = self.pending, []
        for text in pending:
            _warn(text)
