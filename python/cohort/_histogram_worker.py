"""The histogram worker (docs/python.md, "Histograms"): one thread per process that computes the
histograms ``run.log`` was given before their counts existed (cohort.histogram: tensors binned
off the training thread) and logs each at the step of its call, in the order logged. What it holds is bounded where the copies are
taken (cohort.histogram._CopiesHeld, ``COHORT_HISTOGRAM_QUEUE_MB``, 256 by default): past the
bound a histogram is computed at the call instead (``stats()["at_call"]``), so ``run.log`` never
waits for this queue and nothing is dropped.
"""
from __future__ import annotations

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


_histograms = _media_worker.ProcessWorker()


def put(run: Any, key: str, pending: Any, step: int) -> None:
    """The media sink's route for a histogram still to be computed (cohort.media.sink)."""
    _histograms.get(_Worker).put(run, key, pending, step)


def drain(run: Any, timeout: Optional[float]) -> bool:
    """Before ``finish``: waits until the run's histograms were computed and logged."""
    return _histograms.drain(run, timeout)


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
