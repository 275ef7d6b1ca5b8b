"""The media worker's encoding ahead on a small pool (docs/python.md, "Media"): encoding (PNG
with Pillow, which lets go of the GIL while it compresses) bounds how fast media reach the blob
store, so with more than one encoder the items of a hand-over are encoded ahead of their turn,
in order, a bounded window of them at a time (the encoders' count plus one ahead).

``COHORT_MEDIA_ENCODERS`` sets the number of encoders (1..16); the default is half the cores this
process may run on (its affinity: a job's share of a node, not the node), at most 2, at least 1
(1: the worker encodes each item itself when it comes to it).
"""
from __future__ import annotations

import collections
import os
import threading
from concurrent.futures import BrokenExecutor, Future, ThreadPoolExecutor
from typing import Any, Deque, List, Optional, Tuple

from ._threads import quiet_thread


def encoders() -> int:
    raw = os.environ.get("COHORT_MEDIA_ENCODERS")
    if raw:
        try:
            return max(1, min(16, int(raw)))
        except ValueError:
            pass
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(2, cores // 2))


_pool: Optional[ThreadPoolExecutor] = None
_pool_size = 0
_lock = threading.Lock()


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size != n:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="cohort-media-encode",
                                       initializer=quiet_thread)  # signals: the main thread's
            _pool_size = n
        return _pool


def _forget(pool: Optional[ThreadPoolExecutor]) -> None:
    """`pool` broke (a thread's initializer failed): the next hand-over makes a new one."""
    global _pool, _pool_size
    with _lock:
        if pool is not None and _pool is pool:
            _pool, _pool_size = None, 0


def _after_fork_in_child() -> None:
    global _pool, _pool_size, _lock
    _pool, _pool_size = None, 0  # the parent's threads are not this process's
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Ahead:
    """``get(m)``: what ``m._encode()`` returns (or raises) for the items of `items` in their
    order, encoded ahead on the pool. An item passed over (its set failed) is dropped."""

    def __init__(self, items: List[Any]) -> None:
        n = encoders()
        self._pool = _get_pool(n) if n > 1 and len(items) > 1 else None
        self._items = items
        self._next = 0
        self._window = n + 1
        self._futures: Deque[Tuple[Any, Future]] = collections.deque()

    def _fill(self) -> None:
        while (self._pool is not None and self._next < len(self._items)
               and len(self._futures) < self._window):
            m = self._items[self._next]
            try:
                future = self._pool.submit(m._encode)
            except RuntimeError as e:
                # The interpreter is exiting (its pools take no more work once the main thread
                # ended, before the exit handler hands over the last media), or the pool broke
                # (a thread's initializer failed: BrokenExecutor is a RuntimeError): the rest here.
                if isinstance(e, BrokenExecutor):
                    _forget(self._pool)
                self._pool = None
                return
            self._next += 1
            self._futures.append((m, future))

    def get(self, m: Any) -> Any:
        self._fill()
        while self._futures:
            item, future = self._futures.popleft()
            if item is m:
                self._fill()
                try:
                    return future.result()
                except BrokenExecutor:
                    # The pool broke after this item was handed to it (a thread's initializer
                    # failed): not the item's error; it is encoded here, as is the rest.
                    _forget(self._pool)
                    self._pool = None
                    return m._encode()
            future.cancel()  # passed over: its set failed
        # Not submitted yet (further on than the window after a failed set, one encoder, or the
        # interpreter exiting): the items before it are passed over, it is encoded here.
        for k in range(self._next, len(self._items)):
            if self._items[k] is m:
                self._next = k + 1
                break
        result = m._encode()
        self._fill()
        return result

    def close(self) -> None:
        while self._futures:
            self._futures.popleft()[1].cancel()
