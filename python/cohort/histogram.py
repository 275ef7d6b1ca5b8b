"""``cohort.Histogram``: a histogram value for ``run.log`` (docs/python.md, "Histograms").

The bins and counts are computed where the data is: numpy for arrays and sequences,
``torch.histc`` on the tensor's own device for tensors (only the counts and the range leave it),
bin indices and ``torch.bincount`` on the CPU and where histc cannot serve (deterministic
algorithms on CUDA, ranges too wide for the tensor's dtype: _tensor_method).
NaN and infinite values are left out of the counts (``dropped`` says how many); counts given
with ``np_histogram`` must be finite and >= 0. numpy and torch are looked up in ``sys.modules``:
never imported here.

A tensor's histogram is computed later, off the training thread, where that is cheaper than
computing it at the call (docs/python.md, "Histograms"): a CUDA tensor (computing it there waits
for the device twice) and a CPU tensor of _DEFER_CPU_MIN elements or more (binning takes ~14
times as long as a copy). The constructor then takes a snapshot of the values (a copy on the
tensor's device, in the order of the tensor's stream), and the counts are computed when first
read, or by the histogram worker (cohort._histogram_worker) when the value is logged: the log
call claims its key, the worker logs it at that call's step. ``COHORT_HISTOGRAM_DEFER=0`` turns
this off (the counts computed in the constructor, as for every other input).
"""
from __future__ import annotations

import math
import os
import struct
import threading
import sys
from typing import Any, List, Optional, Sequence, Tuple

#: The most bins a histogram may have (core/limits.h kMaxHistogramBins).
MAX_BINS = 512


def _check_bins(num_bins: Any) -> int:
    if isinstance(num_bins, bool) or not isinstance(num_bins, int):
        raise TypeError(f"Histogram: num_bins must be an int, got {type(num_bins).__name__}")
    if not 1 <= num_bins <= MAX_BINS:
        raise ValueError(f"Histogram: num_bins must be 1..{MAX_BINS}, got {num_bins}")
    return num_bins


def _doubles(values: Sequence[float]) -> bytes:
    return struct.pack(f"={len(values)}d", *values)


#: How far _widen moves each end of an empty range, relative to its value, at least: float64
#: values carry 52 bits, so 2^-40 of one is thousands of its units; float32 ones carry 23
#: (their ends are rounded to float32 where the tensor is binned in its own dtype).
_WIDEN_FLOAT64 = 2.0 ** -40
_WIDEN_FLOAT32 = 2.0 ** -20


def _widen(lo: float, hi: float, relative: float = _WIDEN_FLOAT64) -> Tuple[float, float]:
    """A range for values that are all equal (or none): one unit around them, as numpy does,
    or, for values so large that one unit would not change them (|v| > 2^53 in float64), a
    `relative` part of their magnitude. An end beyond the largest double stays at the value
    (which then is the range's top or bottom): the range is never empty."""
    if lo < hi:
        return lo, hi
    step = max(0.5, abs(lo) * relative)
    new_lo, new_hi = lo - step, hi + step
    if not math.isfinite(new_lo):
        new_lo = lo
    if not math.isfinite(new_hi):
        new_hi = hi
    return new_lo, new_hi


class Histogram:
    """A histogram of ``sequence`` (a list, numpy array or torch tensor) in ``num_bins`` uniform
    bins over the range of its finite values, or given as ``np_histogram=(counts, edges)``
    (what ``numpy.histogram`` returns: ``len(edges) == len(counts) + 1``, ascending edges).

    ``run.log({"grad/w": cohort.Histogram(t), "loss": 0.1})`` logs it at the same step as the
    scalars of the call.
    """

    __slots__ = ("_lo", "_hi", "_counts", "_edges", "_dropped", "_snapshot", "_lock")

    def __init__(self, sequence: Any = None, np_histogram: Optional[Tuple[Any, Any]] = None,
                 num_bins: int = 64) -> None:
        num_bins = _check_bins(num_bins)
        self._dropped = 0  # NaN / infinite values left out of the counts
        self._edges: Optional[bytes] = None
        self._snapshot: Optional[_Snapshot] = None  # values whose counts are not computed yet
        if np_histogram is not None:
            if sequence is not None:
                raise ValueError("Histogram: give either a sequence or np_histogram, not both")
            self._from_counts(*np_histogram)
            return
        if sequence is None:
            raise ValueError("Histogram: give a sequence (list, numpy array, tensor) or "
                             "np_histogram=(counts, edges)")
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(sequence, torch.Tensor):
            snapshot = _Snapshot.take(torch, sequence, num_bins)
            if snapshot is not None:
                self._snapshot = snapshot
                self._lock = threading.Lock()
                return
            self._from_tensor(torch, sequence, num_bins)
            return
        np = sys.modules.get("numpy")
        if np is not None:
            self._from_numpy(np, sequence, num_bins)
            return
        self._from_python(sequence, num_bins)

    # -- construction ----------------------------------------------------------------------------
    def _from_counts(self, counts: Any, edges: Any) -> None:
        counts = [float(c) for c in _as_list(counts)]
        edges = [float(e) for e in _as_list(edges)]
        if not 1 <= len(counts) <= MAX_BINS:
            raise ValueError(f"Histogram: {len(counts)} counts (1..{MAX_BINS} bins)")
        if len(edges) != len(counts) + 1:
            raise ValueError(f"Histogram: {len(counts)} counts need {len(counts) + 1} edges, "
                             f"got {len(edges)}")
        for i, c in enumerate(counts):
            if not math.isfinite(c) or c < 0:
                raise ValueError(f"Histogram: count {i} is {c} (counts must be finite and >= 0)")
        for i, e in enumerate(edges):
            if not math.isfinite(e) or (i and not e > edges[i - 1]):
                raise ValueError(f"Histogram: edges must be finite and strictly ascending "
                                 f"(edge {i} is {e})")
        self._lo, self._hi = edges[0], edges[-1]
        self._counts = _doubles(counts)
        self._edges = _doubles(edges)

    def _from_tensor(self, torch: Any, t: Any, num_bins: int) -> None:
        t = t.detach()
        if t.is_complex():
            raise TypeError("Histogram: complex tensors are not supported")
        zeros = 0  # a sparse tensor's implicit zeros: counted in the bin that holds 0
        if t.layout != torch.strided:
            t, zeros = _sparse_values(torch, t)
        if not t.is_floating_point():
            t = t.to(torch.float32 if t.element_size() <= 2 else torch.float64)
        elif t.dtype in (torch.float16, torch.bfloat16):
            t = t.float()
        t = t.reshape(-1)
        n = t.numel()
        if n:
            # One transfer of two numbers (.cpu() waits for the device with the GIL released:
            # the histogram worker's wait must not hold up the training thread).
            lo_hi = torch.stack(torch.aminmax(t)).cpu().tolist()
            if not (math.isfinite(lo_hi[0]) and math.isfinite(lo_hi[1])):
                t = t[torch.isfinite(t)]
                self._dropped = n - t.numel()
                lo_hi = (torch.stack(torch.aminmax(t)).cpu().tolist() if t.numel()
                         else [0.0, 0.0])
        else:
            lo_hi = [0.0, 0.0]
        lo, hi = float(lo_hi[0]), float(lo_hi[1])
        if zeros:
            lo, hi = (min(lo, 0.0), max(hi, 0.0)) if t.numel() else (0.0, 0.0)
        lo, hi = _widen(lo, hi, _WIDEN_FLOAT64 if t.dtype == torch.float64 else _WIDEN_FLOAT32)
        if not t.numel():
            counts = torch.zeros(num_bins, dtype=torch.float64)
        else:
            deterministic = getattr(torch, "are_deterministic_algorithms_enabled", bool)()
            method = _tensor_method(t.device.type, deterministic, torch.__version__,
                                    _wide(torch, t.dtype, lo, hi))
            if method == "histc":
                counts = torch.histc(t, bins=num_bins, min=lo, max=hi)  # where the tensor lives
            else:
                counts = _count_bins(torch, t, lo, hi, num_bins, sort=method == "sort")
        self._lo, self._hi = lo, hi
        counts = counts.to(device="cpu", dtype=torch.float64)
        if zeros:
            counts[_bin_of(0.0, lo, hi, num_bins)] += zeros
        self._counts = counts.numpy().tobytes()

    def _from_numpy(self, np: Any, sequence: Any, num_bins: int) -> None:
        a = np.asarray(sequence)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"Histogram: cannot make a histogram of dtype {a.dtype}")
        a = a.astype(np.float64, copy=False).reshape(-1)
        finite = np.isfinite(a)
        if not finite.all():
            self._dropped = int(a.size - finite.sum())
            a = a[finite]
        lo, hi = _widen(float(a.min()), float(a.max())) if a.size else (-0.5, 0.5)
        if math.isfinite(hi - lo):
            counts, _ = np.histogram(a, bins=num_bins, range=(lo, hi))
        else:  # wider than the largest double: numpy's own binning overflows
            f = _factor(lo, hi)
            index = ((a * f - lo * f) * (num_bins / (hi * f - lo * f))).astype(np.int64)
            counts = np.bincount(np.clip(index, 0, num_bins - 1), minlength=num_bins)
        self._lo, self._hi = lo, hi
        self._counts = counts.astype(np.float64).tobytes()

    def _from_python(self, sequence: Any, num_bins: int) -> None:
        values = [float(v) for v in sequence]
        finite = [v for v in values if math.isfinite(v)]
        self._dropped = len(values) - len(finite)
        lo, hi = _widen(min(finite), max(finite)) if finite else (-0.5, 0.5)
        counts = [0.0] * num_bins
        f = _factor(lo, hi)
        width = (hi * f - lo * f) / num_bins
        for v in finite:
            counts[min(int((v * f - lo * f) / width), num_bins - 1)] += 1
        self._lo, self._hi = lo, hi
        self._counts = _doubles(counts)

    # -- computed later ----------------------------------------------------------------------------
    @property
    def _pending(self) -> bool:
        """Whether the counts are still to be computed (from a snapshot of a tensor)."""
        return self._snapshot is not None

    def _resolve(self) -> None:
        """Computes the counts of the snapshot, once (on the first reader's thread: the worker's,
        or the caller's when it reads the value first)."""
        if self._snapshot is None:
            return
        with self._lock:
            snapshot = self._snapshot
            if snapshot is None:
                return
            if snapshot.error is not None:  # failed before: every reader gets the error
                raise snapshot.error
            try:
                snapshot.compute_into(self)
            except BaseException as e:
                snapshot.error = e
                snapshot.release()
                raise
            self._snapshot = None
            snapshot.release()

    def __getstate__(self) -> dict:
        """Pickled computed (a snapshot holds a tensor and a lock)."""
        self._resolve()
        return {k: getattr(self, k) for k in ("_lo", "_hi", "_counts", "_edges", "_dropped")}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)
        self._snapshot = None

    # -- reading ---------------------------------------------------------------------------------
    @property
    def dropped(self) -> int:
        """NaN and infinite values left out of the counts."""
        self._resolve()
        return self._dropped

    @property
    def histogram(self) -> List[float]:
        """The counts, one per bin."""
        self._resolve()
        return list(struct.unpack(f"={len(self._counts) // 8}d", self._counts))

    @property
    def bins(self) -> List[float]:
        """The bins + 1 edges."""
        self._resolve()
        if self._edges is not None:
            return list(struct.unpack(f"={len(self._edges) // 8}d", self._edges))
        n = len(self._counts) // 8
        lo, hi = self._lo, self._hi
        if math.isfinite(hi - lo):
            return [lo + (hi - lo) * i / n for i in range(n)] + [hi]
        # Wider than the largest double: weighted ends, each term within range.
        return [lo * ((n - i) / n) + hi * (i / n) for i in range(n)] + [hi]

    def _log_value(self) -> Any:
        """What ``run.log`` passes to the extension: _for_log's tuple, or, while the counts are
        still to be computed, a _PendingLog for the histogram worker."""
        if self._snapshot is not None:
            return _PendingLog(self)
        return self._for_log()

    def _for_log(self) -> Tuple[float, float, bytes, Optional[bytes]]:
        """What the extension logs: (lo, hi, counts, edges or None), float64 native order."""
        self._resolve()
        return (self._lo, self._hi, self._counts, self._edges)

    def __repr__(self) -> str:
        self._resolve()
        return (f"cohort.Histogram({len(self._counts) // 8} bins over [{self._lo:g}, "
                f"{self._hi:g}], {sum(self.histogram):g} values)")


def _factor(lo: float, hi: float) -> float:
    """f such that ``v * f - lo * f`` and ``hi * f - lo * f`` are finite for every `v` in
    [lo, hi]: the bin position of `v` is ``(v * f - lo * f) * num_bins / (hi * f - lo * f)``.
    0.5 when hi - lo is beyond the largest double (halving doubles that large is exact), else
    1 (the plain ``v - lo``)."""
    return 1.0 if math.isfinite(hi - lo) else 0.5


#: The widest range float32 arithmetic bins (v - lo stays finite and num_bins / (hi - lo) a
#: normal float32 with up to MAX_BINS bins); wider ones are binned in float64.
_FLOAT32_RANGE = 2.0 ** 100


def _wide(torch: Any, dtype: Any, lo: float, hi: float) -> bool:
    """Whether arithmetic in `dtype` cannot bin [lo, hi] (float32 past _FLOAT32_RANGE, float64
    past the largest double): torch.histc, which bins in the tensor's dtype, would not count
    such values right; they are binned in float64 by _count_bins."""
    if dtype == torch.float64:
        return not math.isfinite(hi - lo)
    return hi - lo > _FLOAT32_RANGE


def _version(text: str) -> Tuple[int, int]:
    """(major, minor) of a version string such as ``"2.1.0+cu121"``; (0, 0) when it has none."""
    parts = text.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return 0, 0


def _tensor_method(device_type: str, deterministic: bool, torch_version: str,
                   wide: bool = False) -> str:
    """How a tensor's values are counted, by its device type, whether
    ``torch.are_deterministic_algorithms_enabled()``, torch's version and whether its range is
    `wide` (see _wide):

    - ``"bincount"``: bin indices and ``torch.bincount`` (_count_bins): always on the CPU
      (faster than histc there); on CUDA for a wide range, and under deterministic algorithms
      from torch 2.1 (where an unweighted bincount is deterministic on CUDA);
    - ``"sort"``: bin indices sorted and counted with ``torch.searchsorted``: on CUDA under
      deterministic algorithms before torch 2.1, where histc and bincount raise there;
    - ``"histc"``: ``torch.histc`` on the tensor's device: otherwise."""
    if device_type == "cpu":
        return "bincount"
    if device_type == "cuda" and deterministic:
        return "bincount" if _version(torch_version) >= (2, 1) else "sort"
    if device_type == "cuda" and wide:
        return "bincount"
    return "histc"


# Per thread (watch's hooks may run on autograd's threads): two buffers of _CHUNK elements that
# the CPU binning reuses, so that a histogram allocates no fresh pages (allocating and faulting
# in 8 MB per 1M-element tensor costs more than the binning itself).
_SCRATCH = threading.local()
_CHUNK = 1 << 20
_DEVICE_CHUNK = 1 << 24  # elements binned at a time on an accelerator (buffers made per call)


def _count_bins(torch: Any, t: Any, lo: float, hi: float, num_bins: int,
                sort: bool = False) -> Any:
    """Counts of a 1-D tensor's values in `num_bins` uniform bins over [lo, hi] (values at `hi`
    in the last bin), by bin index and bincount (`sort`: by sorting the indices and
    searchsorted, deterministic on CUDA in every torch version), on the tensor's device. On the
    CPU ~4x faster than torch.histc (docs/benchmarks.md, "Histograms"), in chunks through the
    thread's scratch buffers. The index is computed in the tensor's dtype where that cannot
    overflow, else in float64 (see _wide and _factor)."""
    dtype = torch.float64 if _wide(torch, t.dtype, lo, hi) else t.dtype
    if t.device.type == "cpu":
        bufs = getattr(_SCRATCH, "bufs", None)
        if bufs is None or bufs[0].dtype != dtype:
            bufs = (torch.empty(_CHUNK, dtype=dtype), torch.empty(_CHUNK, dtype=torch.int32))
            _SCRATCH.bufs = bufs
        chunk = _CHUNK
    else:
        chunk = min(t.numel(), _DEVICE_CHUNK)
        bufs = (torch.empty(chunk, dtype=dtype, device=t.device),
                torch.empty(chunk, dtype=torch.int32, device=t.device))
    scaled, index = bufs
    f = _factor(lo, hi)
    scale = num_bins / (hi * f - lo * f)
    edges = torch.arange(num_bins + 1, dtype=torch.int32, device=t.device) if sort else None
    counts = None
    for start in range(0, t.numel(), chunk):
        part = t[start:start + chunk]
        m = part.numel()
        if part.dtype == dtype and f == 1.0:
            torch.sub(part, lo, out=scaled[:m]).mul_(scale)
        else:  # in float64, where v * f - lo * f cannot overflow
            scaled[:m].copy_(part)
            if f != 1.0:
                scaled[:m].mul_(f)
            scaled[:m].sub_(lo * f).mul_(scale)
        index[:m].copy_(scaled[:m])  # truncation: the values are >= 0
        bins = index[:m].clamp_(0, num_bins - 1)
        if sort:
            at = torch.searchsorted(torch.sort(bins).values, edges)
            c = at[1:] - at[:-1]
        else:
            c = torch.bincount(bins, minlength=num_bins)
        counts = c if counts is None else counts.add_(c)
    return counts


def _sparse_values(torch: Any, t: Any) -> Tuple[Any, int]:
    """(the stored values, how many implicit zeros) of a sparse tensor (an ``nn.Embedding(...,
    sparse=True)`` gradient, say): COO coalesced first (its duplicate indices summed), the
    compressed layouts (CSR, CSC, BSR, BSC) as they are; any other layout made dense."""
    if t.layout == torch.sparse_coo:
        values = t.coalesce().values()
    elif hasattr(t, "values") and t.layout in tuple(
            getattr(torch, name) for name in ("sparse_csr", "sparse_csc", "sparse_bsr",
                                              "sparse_bsc") if hasattr(torch, name)):
        values = t.values()
    else:
        return t.to_dense(), 0
    return values, t.numel() - values.numel()


def _bin_of(v: float, lo: float, hi: float, num_bins: int) -> int:
    """The bin of `v` in `num_bins` uniform bins over [lo, hi] (`hi` in the last one)."""
    f = _factor(lo, hi)
    return max(0, min(int((v * f - lo * f) * (num_bins / (hi * f - lo * f))), num_bins - 1))


def _as_list(x: Any) -> List[Any]:
    tolist = getattr(x, "tolist", None)
    if tolist is not None:
        x = tolist()
    return list(x)


# -- computed later (see the module's docstring) ---------------------------------------------------
#: CPU tensors of this many elements or more are binned off the training thread: their copy
#: costs a fraction of the binning (docs/benchmarks.md, "Histograms").
_DEFER_CPU_MIN = 1 << 16


def _defer_enabled() -> bool:
    return os.environ.get("COHORT_HISTOGRAM_DEFER", "1").lower() not in ("0", "false", "no", "off")


class _BufferPool:
    """CPU buffers for snapshots, reused (allocating and faulting in a fresh 4 MB buffer per
    1M-element tensor would cost more than the binning it moves off the thread), up to
    `max_bytes` kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._free: dict = {}  # (dtype, elements) -> [1-D tensors]
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, torch: Any, n: int, dtype: Any) -> Any:
        with self._lock:
            free = self._free.get((dtype, n))
            if free:
                buf = free.pop()
                self._bytes -= buf.numel() * buf.element_size()
                return buf
        return torch.empty(n, dtype=dtype)

    def give(self, buf: Any) -> None:
        nbytes = buf.numel() * buf.element_size()
        with self._lock:
            if self._bytes + nbytes > self.max_bytes:
                return
            self._free.setdefault((buf.dtype, buf.numel()), []).append(buf)
            self._bytes += nbytes


_POOL = _BufferPool(64 << 20)


def _copies_budget() -> int:
    try:
        return max(1, int(os.environ.get("COHORT_HISTOGRAM_QUEUE_MB", "256"))) << 20
    except ValueError:
        return 256 << 20


class _CopiesHeld:
    """The bytes of the snapshots alive in the process, bounded (COHORT_HISTOGRAM_QUEUE_MB, 256
    by default): a snapshot that would pass the bound is not taken, its histogram computed at
    the call instead (`at_call` counts them). Reserved when a snapshot is taken, not when it is
    logged: `watch` makes one per parameter before its one log call, which would otherwise hold a
    copy of the whole model."""

    def __init__(self) -> None:
        self.bytes = 0
        self.at_call = 0
        self._lock = threading.Lock()

    def reserve(self, nbytes: int) -> bool:
        with self._lock:
            if self.bytes and self.bytes + nbytes > _copies_budget():
                self.at_call += 1
                return False
            self.bytes += nbytes
            return True

    def free(self, nbytes: int) -> None:
        with self._lock:
            self.bytes -= nbytes


_HELD = _CopiesHeld()


def copies_stats() -> dict:
    """Bytes of snapshots held now, and histograms computed at the call for want of room."""
    return {"held_bytes": _HELD.bytes, "at_call": _HELD.at_call}


def _reset_pool_in_child() -> None:
    global _POOL, _HELD
    _POOL = _BufferPool(64 << 20)
    _HELD = _CopiesHeld()  # the parent's snapshots are not this process's to free


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pool_in_child)


class _Snapshot:
    """A copy of a tensor's values taken at the call (so that later changes to the tensor, an
    optimizer step, a zeroed gradient, do not reach the histogram), binned later by
    ``Histogram._from_tensor``: on a CUDA device in the order of the stream that was current at
    the call, on the CPU from a pooled buffer."""

    __slots__ = ("torch", "values", "num_bins", "stream", "pooled", "nbytes", "error", "held")

    def __init__(self, torch: Any, num_bins: int, nbytes: int, held: "_CopiesHeld") -> None:
        self.torch, self.num_bins, self.nbytes, self.held = torch, num_bins, nbytes, held
        self.values: Any = None  # the copy (set by take)
        self.stream: Any = None  # the CUDA stream it was made on
        self.pooled = False      # a buffer of _POOL
        self.error: Optional[BaseException] = None  # the computation's, raised to every reader

    @staticmethod
    def take(torch: Any, t: Any, num_bins: int) -> "Optional[_Snapshot]":
        """A snapshot of `t`, or None where the histogram is computed at the call: deferring
        turned off, a complex or sparse tensor (refused or handled there), a CPU tensor under
        _DEFER_CPU_MIN elements, any other device type."""
        if not _defer_enabled() or t.layout != torch.strided or t.is_complex():
            return None
        device = t.device.type
        n = t.numel()
        if device != "cuda" and not (device == "cpu" and n >= _DEFER_CPU_MIN):
            return None
        nbytes = n * t.element_size()
        held = _HELD
        if not held.reserve(nbytes):  # past the bound: computed at the call, as before
            return None
        snap = _Snapshot(torch, num_bins, nbytes, held)
        try:
            t = t.detach()
            if device == "cuda":
                snap.stream = torch.cuda.current_stream(t.device)
                snap.values = t.clone(memory_format=torch.contiguous_format).view(-1)
            else:
                buf = _POOL.take(torch, n, t.dtype)
                buf.copy_(t.reshape(-1))
                snap.values = buf
                snap.pooled = True
        except BaseException:
            snap.release()
            raise
        return snap

    def compute_into(self, h: "Histogram") -> None:
        torch = self.torch
        if self.stream is not None:
            with torch.cuda.stream(self.stream):
                h._from_tensor(torch, self.values, self.num_bins)
        else:
            h._from_tensor(torch, self.values, self.num_bins)

    def release(self) -> None:
        """Gives the copy back (its buffer to the pool, its bytes to the bound), once."""
        values, self.values = self.values, None
        held, self.held = self.held, None
        if held is not None:
            held.free(self.nbytes)
        if self.pooled and values is not None:
            _POOL.give(values)

    def __del__(self) -> None:  # a Histogram made and dropped before it was read or logged
        if getattr(self, "held", None) is not None:
            self.release()


class _PendingLog:
    """What ``run.log`` gets for a histogram whose counts are still to be computed: the
    extension claims its key as a histogram's and hands it, with the call's step, to the
    histogram worker (cohort._histogram_worker), which computes and logs it."""

    __slots__ = ("histogram",)
    _cohort_media_type = "histogram"

    def __init__(self, histogram: "Histogram") -> None:
        self.histogram = histogram
