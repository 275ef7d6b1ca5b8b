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


def test_torch_tensor_counts_come_from_histc_and_equal_numpy():
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
