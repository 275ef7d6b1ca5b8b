"""cohort.Histogram without a server: bins and counts from lists, numpy arrays, torch tensors
and np_histogram pairs; NaN / infinite values left out and counted; bad input refused."""
import math

import numpy as np
import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
import cohort
from cohort._values import convert


def test_numpy_values_match_numpy_histogram_over_their_range():
    a = np.random.default_rng(1).normal(size=5000)
    h = cohort.Histogram(a, num_bins=40)
    counts, edges = np.histogram(a, bins=40)
    assert h.histogram == counts.tolist()
    assert h.bins == pytest.approx(edges.tolist())
    assert h.dropped == 0


def test_non_finite_values_are_left_out_and_counted():
    h = cohort.Histogram([1.0, 2.0, math.nan, math.inf, -math.inf], num_bins=2)
    assert h.histogram == [1, 1] and h.dropped == 3
    h = cohort.Histogram(np.array([3.0, 3.0, np.nan]), num_bins=4)  # equal values: widened
    assert sum(h.histogram) == 2 and h.bins[0] == 2.5 and h.bins[-1] == 3.5


def test_torch_tensor_counts_equal_numpy():
    torch = pytest.importorskip("torch")
    t = torch.randn(10000, dtype=torch.float64)
    t[5] = float("nan")
    h = cohort.Histogram(t, num_bins=16)
    assert h.dropped == 1
    a = t.numpy()
    a = a[np.isfinite(a)]
    counts, _ = np.histogram(a, bins=16, range=(a.min(), a.max()))
    assert sum(h.histogram) == 9999
    # histc and numpy may put a value on an edge in neighbouring bins; the totals agree
    assert np.abs(np.array(h.histogram) - counts).sum() <= 4
    ints = cohort.Histogram(torch.arange(10), num_bins=10)
    assert ints.histogram == [1] * 10
    # float32 on the CPU (the bincount path): bin edges land where numpy puts them, the
    # largest value in the last bin, the smallest in the first.
    f = torch.arange(1000, dtype=torch.float32)
    assert cohort.Histogram(f, num_bins=10).histogram == [100] * 10
    assert cohort.Histogram(f, num_bins=7).histogram == np.histogram(f.numpy(), bins=7)[0].tolist()
    big = torch.randn(200_000) * 3 + 1
    got = np.array(cohort.Histogram(big, num_bins=64).histogram)
    want, _ = np.histogram(big.numpy(), bins=64, range=(float(big.min()), float(big.max())))
    assert got.sum() == 200_000 and np.abs(got - want).sum() <= 8
    assert np.abs(got - torch.histc(big, 64, float(big.min()), float(big.max())).numpy()).sum() <= 8
    # Larger than the scratch buffers (1M elements): binned in chunks, float64 kept as such.
    long = torch.randn(2_500_001, dtype=torch.float64)
    got = np.array(cohort.Histogram(long, num_bins=32).histogram)
    want, _ = np.histogram(long.numpy(), bins=32, range=(float(long.min()), float(long.max())))
    assert got.sum() == 2_500_001 and np.abs(got - want).sum() <= 8
    same = cohort.Histogram(torch.full((5,), 2.0), num_bins=4)
    assert sum(same.histogram) == 5 and same.bins[0] < 2.0 < same.bins[-1]


def _devices(torch):
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensor_histograms_count_like_numpy_on_every_device(dtype):
    """Tensors on every device at hand: the CPU here, a GPU too where one is (the device check,
    bench/gpu_check.py's companion run, runs this file there): histc over the range of the
    finite values on an accelerator, bin indices and bincount on the CPU."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    for device in _devices(torch):
        big = (torch.randn(300_001, dtype=getattr(torch, dtype)) * 3 + 1).to(device)
        h = cohort.Histogram(big, num_bins=64)
        a = big.cpu().numpy()
        assert (h.bins[0], h.bins[-1]) == (float(a.min()), float(a.max())), device
        want, _ = np.histogram(a, bins=64, range=(float(a.min()), float(a.max())))
        got = np.array(h.histogram)
        assert got.sum() == 300_001 and np.abs(got - want).sum() <= 8, device
        assert h.dropped == 0
        # The largest value in the last bin, the smallest in the first; exact edges.
        f = torch.arange(1000, dtype=getattr(torch, dtype), device=device)
        assert cohort.Histogram(f, num_bins=10).histogram == [100] * 10
        # All values equal: widened to [v - 0.5, v + 0.5], all in the middle bin.
        for bins in (1, 4, 7):
            same = cohort.Histogram(torch.full((5,), 2.0, device=device), num_bins=bins)
            assert same.bins[0] == 1.5 and same.bins[-1] == 2.5, device
            assert same.histogram == [5.0 if i == bins // 2 else 0.0 for i in range(bins)]
        # NaN and infinities are left out and counted.
        bad = big.clone()
        bad[7], bad[8], bad[9] = float("nan"), float("inf"), -float("inf")
        h = cohort.Histogram(bad, num_bins=64)
        assert h.dropped == 3 and sum(h.histogram) == 300_001 - 3, device
        only_bad = torch.tensor([float("nan"), float("inf")], device=device)
        h = cohort.Histogram(only_bad, num_bins=4)
        assert h.dropped == 2 and sum(h.histogram) == 0


def test_np_histogram_pairs_keep_their_edges_and_refuse_bad_counts():
    h = cohort.Histogram(np_histogram=(np.array([1, 0, 5]), np.array([0.0, 0.5, 2.0, 10.0])))
    assert h.histogram == [1, 0, 5] and h.bins == [0.0, 0.5, 2.0, 10.0]
    lo, hi, counts, edges = convert("k", h)
    assert (lo, hi) == (0.0, 10.0) and len(counts) == 24 and len(edges) == 32
    for counts, edges, match in (([1, math.nan], [0, 1, 2], "count 1 is nan"),
                                 ([1, -1], [0, 1, 2], "count 1 is -1"),
                                 ([1, 1], [0, 1], "need 3 edges"),
                                 ([1, 1], [0, 2, 1], "strictly ascending")):
        with pytest.raises(ValueError, match=match):
            cohort.Histogram(np_histogram=(counts, edges))
    with pytest.raises(ValueError, match="1..512"):
        cohort.Histogram([1, 2], num_bins=513)
    with pytest.raises(TypeError, match="num_bins"):
        cohort.Histogram([1, 2], num_bins=2.5)


def test_a_vendor_histogram_object_converts_by_its_counts_and_edges():
    class Histogram:  # the shape of wandb.Histogram
        histogram = [1, 2]
        bins = [0.0, 1.0, 3.0]
    lo, hi, counts, edges = convert("k", Histogram())
    assert (lo, hi) == (0.0, 3.0) and edges is not None


def test_log_conversion_carries_histograms_beside_scalars():
    from cohort._native import native
    out = dict(native._flatten({"loss": 0.5, "grad": {"w": cohort.Histogram([1, 2, 3], num_bins=3)}}))
    assert out == {"loss": 0.5, "grad/w": ("histogram", 3, 1.0, 3.0)}


def test_ranges_wider_than_the_largest_float_are_binned_without_overflow():
    """A float32 range past ~3.4e38 overflowed v - lo in float32 (the largest value landed in
    bin 0); a float64 one past ~1.8e308 made numpy's binning fail. Both are binned in float64
    without forming hi - lo."""
    torch = pytest.importorskip("torch")
    h = cohort.Histogram(torch.tensor([-3e38, 0.0, 3e38], dtype=torch.float32), num_bins=4)
    assert h.histogram == [1, 0, 1, 1]
    wide = [-1.7e308, 1.7e308]
    for values in (np.array(wide), torch.tensor(wide, dtype=torch.float64), wide):
        h = cohort.Histogram(values, num_bins=4)
        assert h.histogram == [1, 0, 0, 1], type(values)
        assert h.bins == pytest.approx([-1.7e308, -0.85e308, 0.0, 0.85e308, 1.7e308], rel=1e-12)
    h = cohort.Histogram(np.array([-1.7e308, -1e307, 1e307, 1.7e308, 1.7e308]), num_bins=3)
    assert h.histogram == [1, 2, 2]
    h = cohort.Histogram(torch.tensor([-1.7e308, -1e307, 1e307, 1.7e308], dtype=torch.float64),
                         num_bins=3)
    assert h.histogram == [1, 2, 1]
    from cohort import histogram
    assert histogram._count_bins(torch, torch.tensor([-3e38, 0.0, 3e38]), -3e38, 3e38, 4,
                                 sort=True).tolist() == [1, 0, 1, 1]


def test_the_counting_method_by_device_and_deterministic_algorithms():
    """torch.histc raises on CUDA under torch.use_deterministic_algorithms(True) (and an
    unweighted bincount before torch 2.1): there a CUDA tensor is counted by bin index and
    bincount, or by sorted indices. Ranges too wide for histc's arithmetic skip it too."""
    from cohort.histogram import _tensor_method
    assert _tensor_method("cpu", False, "1.13.0a0") == "bincount"
    assert _tensor_method("cpu", True, "2.3.1") == "bincount"
    assert _tensor_method("cuda", False, "2.3.1") == "histc"
    assert _tensor_method("cuda", True, "2.1.0+cu121") == "bincount"
    assert _tensor_method("cuda", True, "2.10.0") == "bincount"
    assert _tensor_method("cuda", True, "2.0.1") == "sort"
    assert _tensor_method("cuda", True, "1.13.0a0") == "sort"
    assert _tensor_method("cuda", False, "1.13.0a0", wide=True) == "bincount"
    assert _tensor_method("mps", False, "2.3.1") == "histc"


def test_the_sort_count_equals_the_bincount_one():
    torch = pytest.importorskip("torch")
    from cohort import histogram
    for dtype in (torch.float32, torch.float64):
        t = torch.randn(2_500_001, dtype=dtype) * 3 + 1
        lo, hi = float(t.min()), float(t.max())
        by_sort = histogram._count_bins(torch, t, lo, hi, 64, sort=True)
        by_bincount = histogram._count_bins(torch, t, lo, hi, 64)
        assert by_sort.tolist() == by_bincount.tolist() and int(by_sort.sum()) == t.numel()


def test_tensors_under_deterministic_algorithms():
    torch = pytest.importorskip("torch")
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        for device in _devices(torch):
            f = torch.arange(1000, dtype=torch.float32, device=device)
            assert cohort.Histogram(f, num_bins=10).histogram == [100] * 10, device
            g = torch.randn(10_000, device=device)
            want, _ = np.histogram(g.cpu().numpy(), bins=16,
                                   range=(float(g.min()), float(g.max())))
            got = np.array(cohort.Histogram(g, num_bins=16).histogram)
            assert got.sum() == 10_000 and np.abs(got - want).sum() <= 4, device
    finally:
        torch.use_deterministic_algorithms(was)


def _check_one_bin(h, n, value):
    """All `n` values in one bin of a finite, strictly ascending range that holds `value`."""
    bins = h.bins
    assert all(math.isfinite(b) for b in bins), bins
    assert all(a < b for a, b in zip(bins, bins[1:])), bins
    assert bins[0] <= value <= bins[-1], (bins, value)
    assert sorted(h.histogram)[-1] == n and sum(h.histogram) == n, h.histogram


def test_equal_values_of_any_magnitude_get_a_range_around_them():
    """Equal values were given one unit either side: above 2^53 that left the range empty (numpy
    IndexError, ZeroDivisionError for a float64 tensor). The range is widened by a part of the
    values' magnitude instead, up to the largest double (and float32)."""
    from cohort.histogram import Histogram
    biggest = np.finfo(np.float64).max
    for v in (1e17, -1e17, 1e300, -1e300, biggest, -biggest, 2.0 ** 53, 3.0):
        h = cohort.Histogram(np.full(10, v), num_bins=4)
        _check_one_bin(h, 10, v)
        plain = Histogram.__new__(Histogram)  # the pure-Python path (no numpy)
        plain._dropped, plain._edges, plain._snapshot = 0, None, None
        plain._from_python([v] * 3, 5)
        _check_one_bin(plain, 3, v)
    h = cohort.Histogram(np.full(10, 3.0), num_bins=4)
    assert h.bins[0] == 2.5 and h.bins[-1] == 3.5  # numpy's unit kept where it is enough
    torch = pytest.importorskip("torch")
    for v in (1e20, 1e300, -1e300, biggest, -biggest):
        h = cohort.Histogram(torch.full((10,), v, dtype=torch.float64), num_bins=4)
        _check_one_bin(h, 10, v)
    f32max = float(np.finfo(np.float32).max)
    for v in (3e38, -3e38, f32max, -f32max, 1e35, 1e8, 1e20):
        t = torch.full((10,), v, dtype=torch.float32)
        for device in _devices(torch):
            h = cohort.Histogram(t.to(device), num_bins=4)
            _check_one_bin(h, 10, float(t[0]))
            # In a middle bin, as numpy puts equal values, not at an end of the range.
            assert h.histogram[1:3] != [0, 0], (v, device, h.histogram)


def test_sparse_tensors_count_their_implicit_zeros():
    """A sparse gradient (nn.Embedding(..., sparse=True)) made reshape raise: its stored values
    are counted, and its implicit zeros in the bin that holds 0."""
    torch = pytest.importorskip("torch")
    index = torch.tensor([[0, 1, 1, 3], [2, 0, 0, 1]])  # (1, 0) twice: summed by coalesce
    s = torch.sparse_coo_tensor(index, torch.tensor([3.0, -1.0, -1.0, 2.0]), (5, 4))
    dense = s.to_dense().numpy()
    for t in (s, s.to_sparse_csr()):
        h = cohort.Histogram(t, num_bins=5)
        counts, edges = np.histogram(dense, bins=5)
        assert h.histogram == counts.tolist() and h.bins == pytest.approx(edges.tolist())
    # Stored values all positive: the range reaches down to 0 for the zeros.
    pos = torch.sparse_coo_tensor(torch.tensor([[1, 2]]), torch.tensor([4.0, 8.0]), (10,))
    h = cohort.Histogram(pos, num_bins=4)
    assert h.bins == [0.0, 2.0, 4.0, 6.0, 8.0] and h.histogram == [8, 0, 1, 1]
    # Hybrid (dense values per index), a NaN left out; no stored values at all.
    hybrid = torch.sparse_coo_tensor(torch.tensor([[0, 2]]),
                                     torch.tensor([[1.0, 2.0], [5.0, math.nan]]), (4, 2))
    h = cohort.Histogram(hybrid, num_bins=5)
    assert h.histogram == [4, 1, 1, 0, 1] and h.dropped == 1
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (3, 3))
    h = cohort.Histogram(empty, num_bins=4)
    assert h.histogram == [0, 0, 9, 0] and h.bins[0] == -0.5
    embedding = torch.nn.Embedding(100, 8, sparse=True)
    embedding(torch.tensor([[1, 2, 3, 3]])).sum().backward()
    grad = embedding.weight.grad
    assert grad.is_sparse
    h = cohort.Histogram(grad, num_bins=4)
    want, _ = np.histogram(grad.to_dense().numpy(), bins=4)
    assert h.histogram == want.tolist() and sum(h.histogram) == 800


def test_large_tensors_are_binned_later_from_a_copy_taken_at_the_call(monkeypatch):
    """A CPU tensor of _DEFER_CPU_MIN elements or more (and any CUDA tensor) is binned later,
    off the training thread: the constructor copies the values, so a change to the tensor after
    the call (an optimizer step, a zeroed gradient) does not reach the counts."""
    torch = pytest.importorskip("torch")
    from cohort import histogram as hmod
    n = hmod._DEFER_CPU_MIN
    for device in _devices(torch):
        t = torch.arange(n, dtype=torch.float32, device=device)
        h = cohort.Histogram(t, num_bins=4)
        assert h._pending, device
        t.fill_(-1.0)
        assert h.histogram == [n / 4] * 4 and h.bins[0] == 0 and h.bins[-1] == n - 1, device
        assert not h._pending and h.dropped == 0
    # Logged: the extension gets a value for the histogram worker, then (once computed) the tuple.
    t = torch.randn(n)
    h = cohort.Histogram(t)
    pending = convert("k", h)
    assert pending._cohort_media_type == "histogram" and pending.histogram is h
    lo, hi, counts, edges = pending.histogram._for_log()  # what the worker logs
    assert (lo, hi) == (float(t.min()), float(t.max())) and edges is None
    assert isinstance(convert("k", h), tuple)  # computed: logged as any other histogram
    # Small tensors, sparse ones and COHORT_HISTOGRAM_DEFER=0: computed at the call.
    assert not cohort.Histogram(torch.randn(n - 1))._pending
    assert not cohort.Histogram(torch.randn(n).to_sparse())._pending
    with pytest.raises(TypeError, match="complex"):  # refused at the call, not later
        cohort.Histogram(torch.randn(n, dtype=torch.complex64))
    # Pickled (a multiprocessing queue, a logger's copy): computed first, the same counts.
    import pickle
    t = torch.randn(n)
    copy = pickle.loads(pickle.dumps(cohort.Histogram(t, num_bins=8)))
    assert not copy._pending and sum(copy.histogram) == n and copy.bins[0] == float(t.min())
    monkeypatch.setenv("COHORT_HISTOGRAM_DEFER", "0")
    assert not cohort.Histogram(torch.randn(n))._pending
    plain = pickle.loads(pickle.dumps(cohort.Histogram([1.0, 2.0, 2.0], num_bins=2)))
    assert plain.histogram == [1, 2]


def test_the_copies_reuse_their_buffers():
    torch = pytest.importorskip("torch")
    from cohort import histogram as hmod
    n = hmod._DEFER_CPU_MIN * 2
    t = torch.randn(n)
    first = cohort.Histogram(t)
    buf = first._snapshot.values
    first.histogram  # computed: the buffer goes back to the pool
    second = cohort.Histogram(t * 2)
    assert second._snapshot.values.data_ptr() == buf.data_ptr()
    assert second.bins[-1] == pytest.approx(float(t.max()) * 2)
    pool = hmod._BufferPool(max_bytes=n * 4)
    a, b = pool.take(torch, n, torch.float32), pool.take(torch, n, torch.float32)
    pool.give(a)
    pool.give(b)  # over max_bytes: not kept
    assert pool.take(torch, n, torch.float32) is a
    assert pool.take(torch, n, torch.float32) is not b


def test_the_copies_held_at_once_are_bounded_where_they_are_taken(monkeypatch):
    """watch makes a Histogram per parameter before its one log call: the copies are counted
    when they are taken (a bound applied only when logged would hold a copy of the whole model),
    past the bound computed at the call, and freed when computed or dropped."""
    torch = pytest.importorskip("torch")
    import gc
    from cohort import histogram as hmod
    monkeypatch.setenv("COHORT_HISTOGRAM_QUEUE_MB", "1")
    n = hmod._DEFER_CPU_MIN  # 256 KiB of float32: four fit in 1 MiB
    start = hmod.copies_stats()
    assert start["held_bytes"] == 0
    hs = [cohort.Histogram(torch.randn(n)) for _ in range(6)]
    assert [h._pending for h in hs] == [True] * 4 + [False] * 2
    assert hmod.copies_stats()["held_bytes"] == 4 * n * 4
    assert hmod.copies_stats()["at_call"] == start["at_call"] + 2
    assert all(sum(h.histogram) == n for h in hs)  # the same counts either way
    assert hmod.copies_stats()["held_bytes"] == 0
    dropped = cohort.Histogram(torch.randn(n))
    assert dropped._pending and hmod.copies_stats()["held_bytes"] == n * 4
    del dropped
    gc.collect()
    assert hmod.copies_stats()["held_bytes"] == 0
