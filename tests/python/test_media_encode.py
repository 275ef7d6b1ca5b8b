"""The media worker's encoding ahead (python/cohort/_media_encode.py) without a run: results in
the items' order whatever the pool's timing, errors raised at their item's turn, items passed
over dropped, at most twice the encoders' count encoded ahead, one encoder meaning none ahead."""
import threading
import time

import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
from cohort import _media_encode


class Item:
    """A media value as the worker sees it: `_encode()`; slower for the early ones, so that the
    pool finishes them out of order."""

    started = []
    lock = threading.Lock()

    def __init__(self, n, fail=False):
        self.n, self.fail = n, fail

    def _encode(self):
        with Item.lock:
            Item.started.append(self.n)
        time.sleep(0.02 if self.n % 3 == 0 else 0.001)
        if self.fail:
            raise ValueError(f"item {self.n} cannot be encoded")
        return (f"bytes {self.n}".encode(), "image/png", self.n, 1, 0)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    Item.started = []
    yield monkeypatch


def test_results_come_in_the_items_order_and_errors_at_their_turn(fresh):
    fresh.setenv("COHORT_MEDIA_ENCODERS", "3")
    items = [Item(n, fail=(n == 4)) for n in range(12)]
    ahead = _media_encode.Ahead(items)
    got = []
    for m in items:
        try:
            got.append(ahead.get(m)[2])
        except ValueError as e:
            got.append(str(e))
        # never more than 3 + 1 encoded ahead of the one just taken
        assert len(Item.started) <= min(12, m.n + 1 + 4), (m.n, Item.started)
    ahead.close()
    assert got == [0, 1, 2, 3, "item 4 cannot be encoded", 5, 6, 7, 8, 9, 10, 11]
    assert sorted(Item.started) == list(range(12))  # each encoded once


def test_items_passed_over_are_dropped(fresh):
    fresh.setenv("COHORT_MEDIA_ENCODERS", "2")
    items = [Item(n) for n in range(8)]
    ahead = _media_encode.Ahead(items)
    assert ahead.get(items[0])[2] == 0
    assert ahead.get(items[3])[2] == 3  # 1 and 2 passed over (their set failed)
    assert [ahead.get(m)[2] for m in items[4:]] == [4, 5, 6, 7]
    ahead.close()


def test_one_encoder_encodes_each_item_at_its_turn(fresh):
    fresh.setenv("COHORT_MEDIA_ENCODERS", "1")
    items = [Item(n) for n in range(4)]
    ahead = _media_encode.Ahead(items)
    assert ahead.get(items[0])[2] == 0 and Item.started == [0]
    assert ahead.get(items[1])[2] == 1 and Item.started == [0, 1]
    ahead.close()


def test_the_encoders_setting(fresh):
    fresh.setenv("COHORT_MEDIA_ENCODERS", "0")
    assert _media_encode.encoders() == 1
    fresh.setenv("COHORT_MEDIA_ENCODERS", "99")
    assert _media_encode.encoders() == 16
    fresh.setenv("COHORT_MEDIA_ENCODERS", "many")
    assert 1 <= _media_encode.encoders() <= 2
    fresh.delenv("COHORT_MEDIA_ENCODERS")
    assert 1 <= _media_encode.encoders() <= 2


def test_a_pool_that_takes_no_more_work_leaves_the_rest_to_the_caller(fresh):
    # At interpreter exit the pools refuse new work (RuntimeError) before the exit handler hands
    # over the last media: what was submitted comes from the pool, the rest is encoded here.
    fresh.setenv("COHORT_MEDIA_ENCODERS", "2")
    items = [Item(n) for n in range(6)]
    ahead = _media_encode.Ahead(items)
    assert ahead.get(items[0])[2] == 0
    _media_encode._get_pool(2).shutdown(wait=True)
    try:
        assert [ahead.get(m)[2] for m in items[1:]] == [1, 2, 3, 4, 5]
    finally:
        ahead.close()
        _media_encode._after_fork_in_child()  # a fresh pool for whatever runs next
    assert sorted(Item.started) == list(range(6))


def test_a_pool_whose_threads_cannot_start_leaves_every_item_to_the_caller(fresh):
    # A thread initializer that fails breaks the pool: the items handed to it already get
    # BrokenExecutor, which is not their error (their set would be lost): encoded here instead.
    def failing_initializer():
        raise OSError("no signal mask here")

    fresh.setenv("COHORT_MEDIA_ENCODERS", "3")
    fresh.setattr(_media_encode, "quiet_thread", failing_initializer)
    _media_encode._after_fork_in_child()  # a pool made with the failing initializer
    items = [Item(n) for n in range(7)]
    ahead = _media_encode.Ahead(items)
    try:
        assert [ahead.get(m)[2] for m in items] == list(range(7))
    finally:
        ahead.close()
    assert sorted(Item.started) == list(range(7))  # each encoded once, here
    # The broken pool is dropped: the next hand-over gets a new one (here with threads that
    # start), not one failed submit per hand-over for the life of the process.
    fresh.setattr(_media_encode, "quiet_thread", lambda: None)
    threads = []
    more = [Item(n) for n in range(10, 14)]
    for m in more:
        m._encode = (lambda inner: lambda: (threads.append(
            threading.current_thread().name), inner())[1])(m._encode)
    ahead = _media_encode.Ahead(more)
    try:
        assert [ahead.get(m)[2] for m in more] == [10, 11, 12, 13]
    finally:
        ahead.close()
        _media_encode._after_fork_in_child()  # a fresh pool for whatever runs next
    assert threads and all(t.startswith("cohort-media-encode") for t in threads), threads


def test_encoders_run_at_once():
    # Three items that each wait until all three have started: only encoders running at the
    # same time get past the barrier (encoded one after the other, the first would time out).
    barrier = threading.Barrier(3, timeout=10)

    class Gated:
        def __init__(self, n):
            self.n = n

        def _encode(self):
            barrier.wait()
            return (b"", "image/png", self.n, 1, 0)

    import os
    os.environ["COHORT_MEDIA_ENCODERS"] = "3"
    try:
        items = [Gated(n) for n in range(3)]
        ahead = _media_encode.Ahead(items)
        assert [ahead.get(m)[2] for m in items] == [0, 1, 2]
        ahead.close()
    finally:
        del os.environ["COHORT_MEDIA_ENCODERS"]


def test_an_item_beyond_the_window_after_a_failed_set_moves_the_window_past_it(fresh):
    # A failed set leaves many items unused: the next set's first item, further on than the
    # window, is encoded at once and the window goes on after it (not over the failed set's
    # items again, one by one, with the rest encoded on the worker).
    fresh.setenv("COHORT_MEDIA_ENCODERS", "2")
    items = [Item(n) for n in range(30)]
    ahead = _media_encode.Ahead(items)
    assert ahead.get(items[0])[2] == 0
    assert [ahead.get(m)[2] for m in items[20:]] == list(range(20, 30))
    ahead.close()
    # encoded: 0, the window after it (1..3 at most), then 20..29 and no other item of the
    # failed set 1..19
    assert set(Item.started) - {1, 2, 3} == {0, *range(20, 30)}, sorted(Item.started)


def test_the_same_item_twice_in_a_set(fresh):
    fresh.setenv("COHORT_MEDIA_ENCODERS", "2")
    a, b = Item(1), Item(2)
    ahead = _media_encode.Ahead([a, a, b, a])
    assert [ahead.get(m)[2] for m in (a, a, b, a)] == [1, 1, 2, 1]
    ahead.close()
