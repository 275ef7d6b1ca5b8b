"""The histogram worker (docs/python.md, "Histograms"): one thread per process that computes the
histograms ``run.log`` was given before their counts existed (cohort.histogram: tensors binned
off the training thread) and logs each at the step of its call, in the order logged. Its queue is
bounded by the bytes of the snapshots it holds (``COHORT_HISTOGRAM_QUEUE_MB``, 256 by default):
when it falls behind, ``run.log`` waits for room (counted in ``stats()["waits"]``, with a
warning), nothing is dropped.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Tuple

from . import _media_worker


def _queue_bytes() -> int:
    try:
        return max(1, int(os.environ.get("COHORT_HISTOGRAM_QUEUE_MB", "256"))) << 20
    except ValueError:
        return 256 << 20


class _Worker(_media_worker.Worker):
    thread_name = "cohort-histograms"
    noun = "histogram"
    queue_env = "COHORT_HISTOGRAM_QUEUE_MB"

    def __init__(self) -> None:
        super().__init__()
        self.max_bytes = _queue_bytes()
        self.queued_bytes = 0  # of the snapshots queued or being computed (the lock held)

    def _has_room(self, value: Any) -> bool:
        return self.queued_bytes == 0 or self.queued_bytes + value.nbytes <= self.max_bytes

    def _limit_text(self) -> str:
        return f"COHORT_HISTOGRAM_QUEUE_MB={self.max_bytes >> 20}"

    def _queued(self, value: Any) -> None:
        self.queued_bytes += value.nbytes

    def _handed(self, value: Any) -> None:
        self.queued_bytes -= value.nbytes

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
    """The worker's counters: histograms logged, failures, log calls that waited for room,
    histograms queued."""
    w = _worker
    if w is None:
        return {"logged": 0, "failures": 0, "waits": 0, "queued": 0}
    return {"logged": w.sets, "failures": w.failures, "waits": w.waits, "queued": len(w._items)}
