"""The media worker's queue without a server or an encoder: what a run's drain waits for when a
``log`` call is interrupted while it waits for room."""
import threading
import time
import warnings

import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
from cohort import media


class _InterruptedOnce(threading.Condition):
    """A condition whose first wait_for raises KeyboardInterrupt (Ctrl-C while log() waits)."""

    interrupted = False

    def wait_for(self, predicate, timeout=None):
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return super().wait_for(predicate, timeout)


def test_a_put_interrupted_while_the_queue_is_full_leaves_nothing_pending():
    """A set whose put was interrupted is not queued: the run's drain (finish) must not wait
    its whole timeout for it, nor warn that media are still encoding."""
    w = media._Worker()
    w.max_items = 1
    idle = threading.Event()
    w._thread = threading.Thread(target=idle.wait, daemon=True)  # a worker that takes nothing
    w._thread.start()
    w._cv = _InterruptedOnce()
    other, run = object(), object()
    try:
        w.put(other, "k", None, 0)  # fills the queue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "media encoding is behind"
            with pytest.raises(KeyboardInterrupt):
                w.put(run, "img", None, 1)
        assert w._pending == {id(other): 1} and len(w._items) == 1
        start = time.monotonic()
        assert w.drain(run, timeout=5)
        assert time.monotonic() - start < 1
        assert not w.drain(other, timeout=0.01)  # the queued set is still counted
    finally:
        idle.set()


def test_a_warning_turned_error_does_not_stop_the_worker():
    """Under ``-W error`` the worker's warning about a failed set raised (twice: in its
    handler too) and ended the worker thread: the sets queued behind it (another run's here)
    were never handed over and their run's finish waited its whole timeout for them."""
    queued = threading.Event()

    class Worker(media._Worker):
        def __init__(self):
            super().__init__()
            self.handed = []

        def hand_over(self, run, sets):
            if sets[0][0] == "bad":
                queued.wait(5)  # the next set is queued while this one is handed over
            self.handed += [key for key, _, _ in sets]
            return [(key, step, ValueError("cannot encode") if key == "bad" else None)
                    for key, _, step in sets]

    w, first, second = Worker(), object(), object()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w.put(first, "bad", None, 0)
        w.put(second, "good", None, 0)
        queued.set()
        assert w.drain(second, timeout=5)
        assert w.drain(first, timeout=5)
    assert w.handed == ["bad", "good"]
    assert (w.sets, w.failures) == (1, 1)
