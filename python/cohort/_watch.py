"""``run.watch(models)``: histograms of a torch model's gradients and parameters.

Every ``log_freq``-th forward pass of a watched model (a forward hook counts them) its
parameters are logged as ``parameters/<name>`` and, during the backward pass that follows, each
parameter's gradient as ``gradients/<name>`` (a hook on the parameter tensor sees the gradient
as autograd computes it). The gradient hooks exist only from such a forward pass (with grad
enabled) until a forward pass after the backward pass they ran in: the other steps' backward
passes call no Python. Both go to the run's current step without committing it
(``commit=False``), so they share the step of the training loop's next ``run.log``. The
histograms are computed on the tensors' device (cohort.Histogram: ``torch.histc``, or bin
indices counted where histc cannot serve, as under deterministic algorithms on CUDA).
A histogram that cannot be made or logged never reaches the training loop: the hooks run inside
its forward and backward passes, and a job must not die of its monitoring. Each such failure is
counted (``_Watch.failures``, per key) and warned about once per key and kind of error, with the
error and the note that further ones are counted, not printed; the watch's end (``unwatch``, or
the run's ``finish``) warns once with the counts when there were more. (Histograms binned off
the training thread fail, if at all, in the histogram worker, which reports them the same way:
cohort._histogram_worker.)
"""
from __future__ import annotations

import sys
import threading
import warnings
from typing import Any, Dict, List, Optional, Tuple

from ._histogram_worker import error_kind, failure_summary, warn_at_caller
from .errors import UsageError
from .histogram import MAX_BINS, Histogram

_LOG_CHOICES = ("gradients", "parameters", "all", None)


class _Watch:
    """One watched model: its hooks and its forward-pass counter."""

    def __init__(self, run: Any, model: Any, prefix: str, log: Optional[str], log_freq: int,
                 num_bins: int) -> None:
        self.run = run
        self.model = model
        self.log_freq = log_freq
        self.num_bins = num_bins
        self.calls = 0
        self.handles: List[Any] = []
        self.grad_handles: List[Any] = []  # only while the backward pass of a due step is due
        self.lock = threading.Lock()
        self.grads_fired = False  # a gradient hook ran since the hooks were put there
        self.parameters = log in ("parameters", "all")
        self.gradients = log in ("gradients", "all")
        self.named = [(prefix + name, p) for name, p in model.named_parameters()]
        self.failures: Dict[str, int] = {}  # key -> histograms not logged (_log)
        self.failure_kinds: Dict[Tuple[str, str], int] = {}  # (key, error kind) -> failures
        self.counts_warned = False  # _warn_counts ran (remove)
        self.failures_lock = threading.Lock()
        self.handles.append(model.register_forward_hook(self._after_forward))

    def _after_forward(self, module: Any, inputs: Any, output: Any) -> None:
        if not module.training:
            return
        torch = sys.modules["torch"]
        with self.lock:  # nn.DataParallel runs the hook in a thread per replica
            self.calls += 1
            due = self.calls % self.log_freq == 0
            if due and self.gradients and torch.is_grad_enabled():
                if not self.grad_handles:  # a leaf's hooks are read when backward reaches it
                    self.grad_handles = [p.register_hook(self._grad_hook(name))
                                         for name, p in self.named if p.requires_grad]
                self.grads_fired = False
            elif self.grad_handles and self.grads_fired:
                # Gone once their backward pass has run: another forward pass before it (the
                # other replicas of nn.DataParallel, several passes a step) keeps them.
                self._unhook_gradients()
        if due and self.parameters:
            self._log({"parameters/" + name: p for name, p in self.named})

    def _grad_hook(self, name: str) -> Any:
        key = "gradients/" + name

        def hook(grad: Any) -> None:
            self.grads_fired = True
            if grad is not None:
                self._log({key: grad})
            return None

        return hook

    def _log(self, tensors: Dict[str, Any]) -> None:
        """Logs the histograms of `tensors` (key -> tensor) in one call. An error (a tensor
        Histogram cannot take, a run that refuses the values) is counted per key and warned
        about once per key and kind of error, never raised into the training's forward or
        backward pass: the other keys' histograms are still logged when only some cannot be
        made."""
        values = {}
        for key, tensor in tensors.items():
            try:
                values[key] = Histogram(tensor, num_bins=self.num_bins)
            except Exception as e:  # noqa: BLE001 - monitoring must not stop the training
                self._failed([key], e)
        if not values:
            return
        try:
            self.run.log(values, commit=False)
        except Exception as e:  # noqa: BLE001
            self._failed(list(values), e)

    def _failed(self, keys: List[str], e: BaseException) -> None:
        kind = error_kind(e)
        with self.failures_lock:
            new = [k for k in keys if (k, kind) not in self.failure_kinds]
            for k in keys:
                self.failures[k] = self.failures.get(k, 0) + 1
                self.failure_kinds[(k, kind)] = self.failure_kinds.get((k, kind), 0) + 1
        if not new:
            return
        try:  # a filter that makes warnings errors must not reach the training either
            warnings.warn(f"cohort watch: not logged: {', '.join(new)} ({kind}: {e}); the "
                          f"training goes on, and further failures of "
                          f"{'this key' if len(new) == 1 else 'these keys'} with "
                          f"{type(e).__name__} are counted, not printed (unwatch or the run's "
                          f"finish says how many)", RuntimeWarning, stacklevel=3)
        except Exception:  # noqa: BLE001
            pass

    def _warn_counts(self) -> None:
        """At the watch's end: one warning with the failures per key and kind, when some were
        only counted (a key that failed more than once)."""
        with self.failures_lock:
            counts = dict(self.failure_kinds)
            if self.counts_warned:
                return
            self.counts_warned = True
        if not any(n > 1 for n in counts.values()):
            return
        warn_at_caller(f"cohort watch: {sum(counts.values())} histogram(s) were not logged: "
                       f"{failure_summary(counts)}. Only the first failure of each key and "
                       f"kind was warned about, with its error: fix what it names (or watch "
                       f"without those parameters) to get their histograms.")

    def _unhook_gradients(self) -> None:
        for h in self.grad_handles:
            h.remove()
        self.grad_handles = []
        # Removing a handle empties the tensor's hook dict but leaves the C++ hook that calls it,
        # which would still take the GIL on every backward pass: a parameter left without hooks
        # gets None (what an unhooked tensor has; the setter drops the C++ hook too, as torch's
        # own first register_hook on a tensor, which sets the dict, does).
        for _, p in self.named:
            if p._backward_hooks is not None and not p._backward_hooks:
                p._backward_hooks = None

    def remove(self) -> None:
        with self.lock:
            self._unhook_gradients()
        for h in self.handles:
            h.remove()
        self.handles.clear()
        self._warn_counts()


def _models(models: Any) -> List[Any]:
    torch = sys.modules.get("torch")
    if torch is None:
        raise UsageError("watch: needs torch (import torch first); models must be "
                         "torch.nn.Module")
    items = list(models) if isinstance(models, (list, tuple)) else [models]
    for m in items:
        if not isinstance(m, torch.nn.Module):
            raise UsageError(f"watch: expected torch.nn.Module, got {type(m).__name__}")
    return items


def watch(run: Any, models: Any, criterion: Any = None, log: Optional[str] = "gradients",
          log_freq: int = 1000, idx: Optional[int] = None, log_graph: bool = False,
          num_bins: int = 64) -> None:
    """See :meth:`cohort.Run.watch`."""
    if log not in _LOG_CHOICES:
        raise UsageError(f"watch: log must be 'gradients', 'parameters', 'all' or None, "
                         f"got {log!r}")
    if isinstance(log_freq, bool) or not isinstance(log_freq, int) or log_freq < 1:
        raise UsageError(f"watch: log_freq must be an int >= 1, got {log_freq!r}")
    # Checked here, not at the log_freq-th step inside the training's forward pass.
    if isinstance(num_bins, bool) or not isinstance(num_bins, int) or \
            not 1 <= num_bins <= MAX_BINS:
        raise UsageError(f"watch: num_bins must be an int in 1..{MAX_BINS}, got {num_bins!r}")
    items = _models(models)
    if getattr(run, "disabled", False):
        return  # checked like any other call; no hooks: nothing would keep their histograms
    watches: Dict[int, _Watch] = run.__dict__.setdefault("_watches", {})
    for i, m in enumerate(items):
        if id(m) in watches:
            watches.pop(id(m)).remove()
        # Several models: names are prefixed graph_<i>_ as the seed SDK does, so they stay apart.
        n = i if idx is None else idx + i
        prefix = f"graph_{n}_" if len(items) > 1 or idx else ""
        if log is None:
            continue
        watches[id(m)] = _Watch(run, m, prefix, log, log_freq, num_bins)


def unwatch(run: Any, models: Any = None) -> None:
    """See :meth:`cohort.Run.unwatch`."""
    watches: Dict[int, _Watch] = run.__dict__.get("_watches", {})
    if models is None:
        for w in watches.values():
            w.remove()
        watches.clear()
        return
    for m in (models if isinstance(models, (list, tuple)) else [models]):
        w = watches.pop(id(m), None)
        if w is not None:
            w.remove()
