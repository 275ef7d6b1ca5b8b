"""What the integrations share: starting (or adopting) the run a framework logs to, in plain or
shared mode, and agreeing on a shared run's id across ranks."""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Dict, Mapping, Optional, Set

import cohort

from ..settings import Settings, coerce_settings

MODES = (None, "shared")


def check_mode(mode: Optional[str]) -> Optional[str]:
    if mode not in MODES:
        raise ValueError(f"mode must be None (the main process logs) or 'shared' (every rank "
                         f"logs into one shared run), got {mode!r}")
    return mode


def _dist():
    """torch.distributed when a process group is up (the framework started it), else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist


_shared_runs = 0  # shared runs this process joined through the process group's store


def _store(dist: Any) -> Any:
    """The key-value store the process group was set up with (env://, tcp://, file://), or
    None (a backend without one)."""
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001 - no store (MPI), or a torch without the function
        return None


def shared_run_id(explicit: Optional[str], rank: int, world_size: int) -> Optional[str]:
    """The id every rank of a shared run joins: the one given, else the environment's
    (COHORT_RUN_ID, or torchrun's TORCHELASTIC_RUN_ID, from which the client library derives
    one), else one agreed through the process group's key-value store. None when there is no
    other rank to agree with (the client library picks one).

    No collective: frameworks start the run on some ranks only, or at different points
    (accelerate's ``init_trackers`` runs on the main process alone, the other processes join at
    their first ``log``, after DDP's own collectives), and a broadcast there hangs the job. The
    first rank to get here writes a new id under the key of this process's n-th shared run;
    every rank reads it (a read waits only for that write, which nothing else holds up)."""
    global _shared_runs
    if explicit:
        return explicit
    if os.environ.get("COHORT_RUN_ID"):
        return None
    te = os.environ.get("TORCHELASTIC_RUN_ID")
    if te and te != "none":
        return None
    dist = _dist()
    if dist is None or dist.get_world_size() <= 1:
        return None
    store = _store(dist)
    if store is None:
        raise cohort.UsageError(
            "mode='shared': this process group has no key-value store to agree on the shared "
            "run's id; pass the same id= on every rank, or set COHORT_RUN_ID")
    from ..sdk import _random_id
    _shared_runs += 1
    key = f"cohort/shared_run/{_shared_runs}"
    if store.add(key + "/joined", 1) == 1:
        store.set(key, _random_id())
    value = store.get(key)
    return value.decode() if isinstance(value, bytes) else str(value)


def start_run(*, run: Any = None, mode: Optional[str] = None, rank: int = 0,
              world_size: int = 1, settings: Any = None, init_kwargs: Optional[Dict] = None,
              config: Optional[Dict] = None) -> Any:
    """The run to log to: ``run`` when given, else the current run of this process
    (``cohort.run``, as the vendor's integrations reuse ``wandb.run``) when it is going, else a
    new one (``cohort.init(**init_kwargs)``). With ``mode="shared"`` this process joins one run
    shared by every rank as the writer ``rank_<rank>``: rank 0 is its primary and the only
    writer that ends it."""
    if run is not None:
        return run
    current = cohort.run
    if current is not None and not current.finished:
        return current
    kwargs = {k: v for k, v in (init_kwargs or {}).items() if v is not None}
    s = coerce_settings(settings)
    if mode == "shared":
        s = Settings(**s.to_dict(non_default=True))
        if kwargs.get("mode") not in (None, "shared"):
            s.mode = "shared"           # init's mode= (offline, disabled) says how it logs
        elif s.mode in ("offline", "disabled", "dryrun"):
            kwargs["mode"] = "shared"   # the settings' mode says how it logs: kept
        else:
            s.mode = "shared"
        if s.x_label is None:
            s.x_label = f"rank_{rank}"
        if s.x_primary is None:
            s.x_primary = rank == 0
        if s.x_update_finish_state is None:
            s.x_update_finish_state = rank == 0
        run_id = shared_run_id(kwargs.get("id"), rank, world_size)
        if run_id:
            kwargs["id"] = run_id
    if config:
        kwargs["config"] = {**(kwargs.get("config") or {}), **config}
    return cohort.init(settings=s, **kwargs)


def numeric(values: Dict[str, Any]) -> Dict[str, float]:
    """The values of a dict that are plain numbers (for artifact metadata)."""
    import math
    import numbers
    out = {}
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            continue
        v = float(v)
        if math.isfinite(v):
            out[k] = v
    return out


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b) or float(a) == float(b)
    except Exception:  # noqa: BLE001 - tensors of several elements, odd types: not the same
        return False


class StepValues:
    """Leaves out of a log call the keys already logged with the same value at the same step.

    Frameworks log some keys with every call (``epoch``, ``trainer/global_step``,
    ``train/global_step``), several calls per step (train, eval and epoch-end metrics); the
    repeats carry nothing new, and a key logged again at a step after the client library has
    flushed that step's row would be sent and stored again."""

    def __init__(self) -> None:
        self.step: Optional[int] = None
        self.seen: Dict[str, Any] = {}

    def new(self, step: Optional[int], values: Dict[str, Any]) -> Dict[str, Any]:
        if step is None or step != self.step:
            self.step, self.seen = step, {}
        out = {k: v for k, v in values.items() if not (k in self.seen and _same(self.seen[k], v))}
        self.seen.update(out)
        return out


class Loggable:
    """Leaves out of a framework's log call the values ``run.log`` cannot take (objects, lists
    of strings: arrays, tensors and lists of numbers are histograms), with one warning per key,
    so that one such value neither fails the call's other values nor the training (``run.log``
    raises TypeError for the whole call). None is left out silently."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.warned: Set[str] = set()

    def __call__(self, values: Mapping[str, Any], _prefix: str = "") -> Dict[str, Any]:
        from .._values import convert
        out: Dict[str, Any] = {}
        for k, v in values.items():
            key = _prefix + str(k)
            if v is None:
                continue
            if isinstance(v, (bool, int, float)):
                out[k] = v
                continue
            if isinstance(v, Mapping):
                inner = self(v, key + "/")
                if inner:
                    out[k] = inner
                continue
            try:
                convert(key, v)
            except (TypeError, ValueError) as e:
                if key not in self.warned:
                    self.warned.add(key)
                    warnings.warn(f"cohort ({self.where}): {key!r} is not logged: {e} (it is "
                                  f"left out of every log call; log it yourself, e.g. as a "
                                  f"cohort.Table or cohort.Histogram)", RuntimeWarning,
                                  stacklevel=3)
                continue
            out[k] = v
        return out
