"""Config, summary and metadata values as plain JSON types (a leaf module: ``_values`` and
``artifacts`` both use it, and neither may import the other)."""
from __future__ import annotations

import enum
import math
import numbers
import os
import sys
from typing import Any, Mapping


def jsonable(value: Any, _depth: int = 0) -> Any:
    """Turns a config/summary value into plain JSON types.

    numpy and torch values become numbers or lists, non-finite floats the strings
    "NaN"/"Infinity"/"-Infinity" (the server's convention), paths and unknown objects strings.
    """
    if _depth > 64:
        raise ValueError("value nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v, _depth + 1) for v in items]
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, (np.generic, np.ndarray)):
        return jsonable(value.tolist(), _depth + 1)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return jsonable(value.detach().cpu().tolist(), _depth + 1)
    if isinstance(value, enum.Enum):
        return jsonable(value.value, _depth + 1)
    if hasattr(type(value), "__dataclass_fields__") and not isinstance(value, type):
        import dataclasses
        return jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, numbers.Real):
        return jsonable(float(value), _depth + 1)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "__dict__") and type(value).__name__ == "Namespace":  # argparse
        return jsonable(vars(value), _depth + 1)
    return str(value)
