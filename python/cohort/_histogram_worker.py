"""The histogram worker (docs/python.md, "Histograms"): one thread per process that computes the
histograms ``run.log`` was given before their counts existed (cohort.histogram: tensors binned
off the training thread) and logs each at the step of its call, in the order logged. What it holds is bounded where the copies are
taken (cohort.histogram._CopiesHeld, ``COHORT_HISTOGRAM_QUEUE_MB``, 256 by default): past the
bound a histogram is computed at the call instead (``stats()["at_call"]``), so ``run.log`` never
waits for this queue and nothing is dropped.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Tuple

from . import _media_worker


class _Worker(_media_worker.Worker):
    thread_name = "cohort-histograms"
    noun = "histogram"

    def _has_room(self, value: Any) -> bool:
        return True  # bounded where the copies are taken (cohort.histogram._CopiesHeld)

    def hand_over(self, run: Any, items: List[Tuple[str, Any, int]]
                  ) -> List[Tuple[str, int, Optional[BaseException]]]:
        out: List[Tuple[str, int, Optional[BaseException]]] = []
        for key, pending, step in items:
            try:
                run._log_histogram(key, step, pending.histogram._for_log())
                out.append((key, step, None))
            except Exception as e:  # noqa: BLE001 - this histogram only
                out.append((key, step, e))
        return out


_worker: Optional[_Worker] = None
_worker_lock = threading.Lock()


def put(run: Any, key: str, pending: Any, step: int) -> None:
    """The media sink's route for a histogram still to be computed (cohort.media.sink)."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = _Worker()
        w = _worker
    w.put(run, key, pending, step)


def _after_fork_in_child() -> None:
    global _worker, _worker_lock
    _worker = None  # the parent's queue and thread are not this process's
    _worker_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def drain(run: Any, timeout: Optional[float]) -> bool:
    """Before ``finish``: waits until the run's histograms were computed and logged."""
    w = _worker
    return True if w is None else w.drain(run, timeout)


def stats() -> Dict[str, int]:
    """The worker's counters: histograms logged, failures, histograms queued; and the
    histograms computed at the call for want of room for their copy (`at_call`) and the bytes
    of copies held now."""
    from .histogram import copies_stats
    w = _worker
    out = {"logged": 0, "failures": 0, "queued": 0} if w is None else {
        "logged": w.sets, "failures": w.failures, "queued": len(w._items)}
    out.update(copies_stats())
    return out
