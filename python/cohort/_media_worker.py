"""The media worker's queue (docs/python.md, "Media"): one thread per process that takes the
media sets ``run.log`` queued, in the order they were logged, and hands them over, the sets of
one run queued together at a time (cohort.media's worker encodes and hashes them, stages the
files for the node agent and logs their rows). The queue is bounded: when the hand-over falls
behind, ``run.log`` waits for room (counted in ``stats()["waits"]``, with a warning), nothing is
dropped.

This module knows nothing of the media types: cohort.media imports it, never the other way
round (``sink``, ``drain`` and ``stats`` are importable from cohort.media).
"""
from __future__ import annotations

import collections
import os
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

#: Media sets the worker hands to the agent in one intent (what is queued when it looks).
MAX_SETS_PER_INTENT = 16


def _queue_size(env: str = "COHORT_MEDIA_QUEUE") -> int:
    try:
        return max(1, int(os.environ.get(env, "64")))
    except ValueError:
        return 64



def _warn(text: str) -> None:
    """A RuntimeWarning from the worker thread that never stops it: where warnings are turned
    into errors (``-W error``), the text goes to stderr instead (an exception here ended the
    thread, and the sets queued behind waited until finish gave up on them)."""
    try:
        warnings.warn(text, RuntimeWarning, stacklevel=2)
    except Exception:  # noqa: BLE001 - the warning is the report
        print(text, file=sys.stderr)

class Worker:
    """One thread per process that hands over media sets in the order they were logged, the
    sets of one run queued together at a time (`hand_over`: what the subclass does with them).

    The training thread only appends to a deque: it never wakes the worker (a wake-up and the
    GIL hand-over it starts cost ~100 us, twice what logging an image may take). The worker
    polls, every millisecond while there is work and backing off to every 50 ms when idle; it
    wakes the training thread only when that thread waits (the queue full, or ``finish``)."""

    #: The worker thread's name, what its queue-full warning and its failures call the items,
    #: and the environment variable that sizes its queue (items).
    thread_name = "cohort-media"
    noun = "media"
    queue_env = "COHORT_MEDIA_QUEUE"

    def __init__(self) -> None:
        self._items: "collections.deque[Tuple[Any, str, Any, int]]" = collections.deque()
        self.max_items = _queue_size(self.queue_env)
        self._cv = threading.Condition()
        self._pending: Dict[int, int] = {}  # id(run) -> sets not yet handed over
        self._thread: Optional[threading.Thread] = None
        self.waits = 0     # log calls that waited for room in the queue
        self.failures = 0  # sets that could not be encoded or handed over (warned)
        self.sets = 0      # sets handed over

    def put(self, run: Any, key: str, mset: Any, step: int) -> None:
        with self._cv:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self.thread_name,
                                                daemon=True)
                self._thread.start()
            # Counted from now (a drain of the run meanwhile waits for this set too), and no
            # longer if the wait for room ends in an exception (KeyboardInterrupt, a warning
            # turned error): the set is then not queued, and the run's drain must not wait
            # for it.
            self._pending[id(run)] = self._pending.get(id(run), 0) + 1
            try:
                if not self._has_room(mset):
                    self.waits += 1
                    if self.waits == 1 or self.waits % 1000 == 0:
                        warnings.warn(f"cohort: {self.noun} encoding is behind; log() waits for "
                                      f"room in its queue ({self.waits} waits so far, "
                                      f"{self._limit_text()})", RuntimeWarning, stacklevel=4)
                    self._cv.wait_for(lambda: self._has_room(mset))
                self._items.append((run, key, mset, step))
            except BaseException:
                n = self._pending.get(id(run), 1) - 1
                if n > 0:
                    self._pending[id(run)] = n
                else:
                    self._pending.pop(id(run), None)
                self._cv.notify_all()
                raise

    def _loop(self) -> None:
        from ._threads import quiet_thread
        quiet_thread()
        idle = 0.001
        while True:
            # The sets of one run queued now, up to MAX_SETS_PER_INTENT: one hand-over (one
            # staging directory, one intent for the agent) for all of them.
            batch: List[Tuple[str, Any, int]] = []
            run = None
            while len(batch) < MAX_SETS_PER_INTENT:
                try:
                    item = self._items[0]
                except IndexError:
                    break
                if run is not None and item[0] is not run:
                    break
                self._items.popleft()
                run = item[0]
                batch.append(item[1:])
                item = None
            if not batch:
                time.sleep(idle)
                idle = min(idle * 2, 0.05)
                continue
            idle = 0.001
            done = 0
            try:
                for key, step, error in self.hand_over(run, batch):
                    done += 1
                    if error is None:
                        self.sets += 1
                    else:
                        self.failures += 1
                        _warn(f"cohort: {self.noun} {key!r} at step {step} was not logged: "
                              f"{error}")
            except Exception as e:  # noqa: BLE001 - reported, the worker goes on
                self.failures += len(batch) - done
                _warn(f"cohort: {len(batch) - done} {self.noun} value(s) of keys "
                      f"{sorted({k for k, _, _ in batch[done:]})} were not logged: {e}")
            finally:
                with self._cv:
                    n = self._pending.get(id(run), len(batch)) - len(batch)
                    if n > 0:
                        self._pending[id(run)] = n
                    else:
                        self._pending.pop(id(run), None)
                    self._cv.notify_all()
                # Nothing of the sets outlives their hand-over here: a waiting worker must not
                # keep the run (or its arrays) alive until the interpreter exits.
                run = batch = None

    # Room in the queue for `value` (called with the lock held): by item count here.
    def _has_room(self, value: Any) -> bool:
        return len(self._items) < self.max_items

    def _limit_text(self) -> str:
        return f"{self.queue_env}={self.max_items}"

    def drain(self, run: Any, timeout: Optional[float]) -> bool:
        """Waits until every set `run` logged was handed over; False after `timeout` seconds."""
        with self._cv:
            return self._cv.wait_for(lambda: id(run) not in self._pending, timeout)

    def hand_over(self, run: Any, sets: List[Tuple[str, Any, int]]
                  ) -> List[Tuple[str, int, Optional[BaseException]]]:
        """Hands over `sets` ((key, media set, step) of `run`, in the order logged); returns
        (key, step, error or None) per set. cohort.media's worker says how."""
        raise NotImplementedError


class ProcessWorker:
    """One worker per process, made on first use, and again in a forked child (the parent's
    queue and thread are not the child's)."""

    def __init__(self) -> None:
        self._worker: Optional[Worker] = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def get(self, make: Callable[[], Worker]) -> Worker:
        with self._lock:
            if self._worker is None:
                self._worker = make()
            return self._worker

    def current(self) -> Optional[Worker]:
        return self._worker

    def drain(self, run: Any, timeout: Optional[float]) -> bool:
        """Waits until every item `run` logged was handed over; False after `timeout` s."""
        w = self._worker
        return True if w is None else w.drain(run, timeout)

    def _forget(self) -> None:
        self._worker = None
        self._lock = threading.Lock()


_media = ProcessWorker()


def get_worker(make: Callable[[], Worker]) -> Worker:
    """This process's media worker, made by `make` on first use (in a forked child: again)."""
    return _media.get(make)


def drain(run: Any, timeout: Optional[float]) -> bool:
    """Before ``finish``: waits for the run's media to be handed to the agent."""
    return _media.drain(run, timeout)


def stats() -> Dict[str, int]:
    """The worker's counters: sets handed over, failures, log calls that waited for room."""
    w = _media.current()
    if w is None:
        return {"sets": 0, "failures": 0, "waits": 0, "queued": 0}
    return {"sets": w.sets, "failures": w.failures, "waits": w.waits, "queued": len(w._items)}
