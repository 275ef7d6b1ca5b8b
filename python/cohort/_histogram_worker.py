"""The histogram worker (docs/python.md, "Histograms"): one thread per process that computes the
histograms ``run.log`` was given before their counts existed (cohort.histogram: tensors binned
off the training thread) and logs each at the step of its call, in the order logged. What it holds is bounded where the copies are
taken (cohort.histogram._CopiesHeld, ``COHORT_HISTOGRAM_QUEUE_MB``, 256 by default): past the
bound a histogram is computed at the call instead (``stats()["at_call"]``), so ``run.log`` never
waits for this queue and nothing is dropped.

A histogram that cannot be computed or logged is counted (``stats()["failures"]``) and warned
about once per run, key and kind of error (``run.watch`` of a model of 200 parameters that
fail at every ``log_freq``-th step would otherwise print 200 warnings each time): the first
failure's warning says that further failures of that key are counted, not printed, and the
run's ``finish`` (``drain``) warns once with how many there were per key.
"""
from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import _media_worker

#: Keys a summary of failures names one by one; the rest are counted.
_SUMMARY_KEYS = 10


def error_kind(e: BaseException) -> str:
    """The kind of an error, for grouping failures: its type, and its status code where it has
    one (a cohort.Error from the extension: ``CommError (resource_exhausted)``)."""
    code = getattr(e, "code", None)
    return type(e).__name__ + (f" ({code})" if isinstance(code, str) and code else "")


def failure_summary(counts: Dict[Tuple[str, str], int]) -> str:
    """``'k' 57 times (Kind), ...`` of (key, kind) -> failures, the most frequent first, at most
    _SUMMARY_KEYS of them named."""
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{key!r} {n} time{'s' if n != 1 else ''} ({kind})"
             for (key, kind), n in ordered[:_SUMMARY_KEYS]]
    if len(ordered) > _SUMMARY_KEYS:
        rest = sum(n for _, n in ordered[_SUMMARY_KEYS:])
        parts.append(f"and {rest} more of {len(ordered) - _SUMMARY_KEYS} other key(s)")
    return ", ".join(parts)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_at_caller(text: str) -> None:
    """A RuntimeWarning at the first frame outside this package (the user's ``finish`` or
    ``unwatch``); where warnings are made errors, the text goes to stderr instead (the end of
    a run must not fail of its report)."""
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    try:
        warnings.warn(text, RuntimeWarning, stacklevel=level)
    except Exception:  # noqa: BLE001 - the warning is the report
        print(text, file=sys.stderr)


class _FirstFailure(Exception):
    """The error of a key's first failure of its kind, as the worker's warning shows it: with
    the note that later ones are only counted."""


class _Worker(_media_worker.Worker):
    thread_name = "cohort-histograms"
    noun = "histogram"

    def __init__(self) -> None:
        super().__init__()
        # id(run) -> (a weak reference to the run, or None; (key, error kind) -> failures):
        # read and cleared by the run's drain. The reference tells a run that was never
        # finished from a later one given its id.
        self._failed: Dict[int, Tuple[Any, Dict[Tuple[str, str], int]]] = {}
        self._failed_lock = threading.Lock()

    def _counts(self, run: Any) -> Dict[Tuple[str, str], int]:
        """The failure counts of `run` (called with _failed_lock held)."""
        entry = self._failed.get(id(run))
        if entry is not None and (entry[0] is None or entry[0]() is run):
            return entry[1]
        try:
            ref: Any = weakref.ref(run)
        except TypeError:
            ref = None
        counts: Dict[Tuple[str, str], int] = {}
        self._failed[id(run)] = (ref, counts)
        return counts

    def _has_room(self, value: Any) -> bool:
        return True  # bounded where the copies are taken (cohort.histogram._CopiesHeld)

    def hand_over(self, run: Any, items: List[Tuple[str, Any, int]]
                  ) -> List[Tuple[str, int, Optional[BaseException]]]:
        """Logs each histogram; returns what the worker reports: every success, and the first
        failure of each (key, kind) of the run (warned by the worker). A later failure of the
        same key and kind is counted here (``failures``, and per key for the run's finish) and
        left out of what is returned: not warned again."""
        out: List[Tuple[str, int, Optional[BaseException]]] = []
        for key, pending, step in items:
            try:
                run._log_histogram(key, step, pending.histogram._for_log())
                out.append((key, step, None))
            except Exception as e:  # noqa: BLE001 - this histogram only
                kind = error_kind(e)
                with self._failed_lock:
                    counts = self._counts(run)
                    n = counts[(key, kind)] = counts.get((key, kind), 0) + 1
                if n == 1:
                    out.append((key, step, _FirstFailure(
                        f"{kind}: {e}; the training goes on, and further failures of this key "
                        f"with {kind.split(' ')[0]} are counted, not printed (the run's finish "
                        f"says how many)")))
                else:
                    self.failures += 1  # the worker's own count of what it reports
        return out

    def take_failures(self, run: Any) -> Dict[Tuple[str, str], int]:
        """(key, error kind) -> failures of `run` so far, forgotten here."""
        with self._failed_lock:
            counts = self._counts(run)
            del self._failed[id(run)]
            return counts


_histograms = _media_worker.ProcessWorker()


def put(run: Any, key: str, pending: Any, step: int) -> None:
    """The media sink's route for a histogram still to be computed (cohort.media.sink)."""
    _histograms.get(_Worker).put(run, key, pending, step)


def drain(run: Any, timeout: Optional[float]) -> bool:
    """Before ``finish``: waits until the run's histograms were computed and logged; then, when
    some key failed more than once (only its first failure was warned about), warns once with
    the count per key."""
    done = _histograms.drain(run, timeout)
    w = _histograms.current()
    if isinstance(w, _Worker):
        counts = w.take_failures(run)
        if any(n > 1 for n in counts.values()):
            run_id = getattr(run, "id", None)
            text = (f"cohort: {'run ' + str(run_id) + ': ' if run_id else ''}"
                    f"{sum(counts.values())} histogram(s) were not logged: "
                    f"{failure_summary(counts)}. Only the first failure of each key was warned "
                    f"about, with its error: fix what it names (or stop logging those keys) "
                    f"to get their histograms.")
            warn_at_caller(text)
    return done


def stats() -> Dict[str, int]:
    """The worker's counters: histograms logged, failures, histograms queued; and the
    histograms computed at the call for want of room for their copy (`at_call`) and the bytes
    of copies held now."""
    from .histogram import copies_stats
    w = _histograms.current()
    out = {"logged": 0, "failures": 0, "queued": 0} if w is None else {
        "logged": w.sets, "failures": w.failures, "queued": len(w._items)}
    out.update(copies_stats())
    return out
