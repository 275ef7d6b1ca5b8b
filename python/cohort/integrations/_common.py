"""What the integrations share: starting (or adopting) the run a framework logs to, in plain or
shared mode, and agreeing on a shared run's id across ranks."""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional

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


def shared_run_id(explicit: Optional[str], rank: int, world_size: int) -> Optional[str]:
    """The id every rank of a shared run joins: the one given, else the environment's
    (COHORT_RUN_ID, or torchrun's TORCHELASTIC_RUN_ID, from which the client library derives
    one), else rank 0's new id broadcast over the framework's process group. None when there is
    no other rank to agree with (the client library picks one)."""
    if explicit:
        return explicit
    if os.environ.get("COHORT_RUN_ID"):
        return None
    te = os.environ.get("TORCHELASTIC_RUN_ID")
    if te and te != "none":
        return None
    # The process group decides, not the environment: every rank must take part in the
    # broadcast or none (a launcher may set WORLD_SIZE in some processes only).
    dist = _dist()
    if dist is None or dist.get_world_size() <= 1:
        return None
    from ..sdk import _random_id
    box = [_random_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return str(box[0])


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
