"""Value conversion for ``run.log`` (the slow path) and JSON for config and summary.

The extension reads Python ``float``/``int``/``bool`` (and subclasses such as ``numpy.float64``)
and nested ``dict``s itself. Every other value comes to :func:`convert`, which returns a float,
a dict to flatten, or raises a TypeError naming the key. numpy and torch are looked up in
``sys.modules``: they are never imported here.
"""
from __future__ import annotations

import enum
import json
import math
import numbers
import os
import sys
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from .histogram import Histogram
from .media import media_set

_HINT = ("log numbers: int, float, bool, numpy scalars, 0-d numpy arrays or tensors, "
         "or dicts of them")


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    name = type(value).__module__ + "." + type(value).__qualname__
    name = name.replace("builtins.", "")
    if shape is not None:
        return f"{name} of shape {tuple(shape)}"
    return name


def convert(key: str, value: Any
            ) -> Union[float, Dict[str, Any], Tuple[float, float, bytes, Optional[bytes]]]:
    """Converts one logged value that is not a float, int, bool or dict.

    Returns a float, a dict whose items are logged under ``key/...``, a histogram as the
    extension takes it (``Histogram._for_log``), or a media set (``cohort.Image`` & co., or a
    list of them: ``media.media_set``) that the extension hands to ``media.sink``. Raises TypeError naming ``key`` for anything
    else.
    """
    if isinstance(value, Histogram):
        return value._for_log()
    if isinstance(value, (list, tuple)) or hasattr(value, "_cohort_media_type"):
        mset = media_set(key, value)
        if mset is not None:
            return mset
    if getattr(value, "_type", None) == "histogram" or type(value).__name__ == "Histogram":
        converted = _foreign_histogram(value)
        if converted is not None:
            return converted._for_log()
    if isinstance(value, Mapping):
        return dict(value)
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.generic):
            if isinstance(value, (np.integer, np.floating, np.bool_)):
                return float(value)
        elif isinstance(value, np.ndarray):
            if value.ndim == 0 and value.dtype.kind in "biuf":
                return float(value)
            raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)} "
                            f"(dtype {value.dtype}); {_HINT}")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.dim() == 0 and not value.is_complex():
            return float(value.item())
        raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)}; log a 0-d tensor "
                        f"(e.g. loss.detach(), t.mean()) or a number")
    if isinstance(value, numbers.Real):  # fractions.Fraction, other Real types
        return float(value)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"log: key {key!r}: cannot log a {type(value).__name__} ({value!r:.40}); "
                        f"{_HINT}")
    raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)}; {_HINT}")


def _foreign_histogram(value: Any) -> Optional[Histogram]:
    """A histogram object of another SDK (``wandb.Histogram``: ``.histogram`` counts and
    ``.bins`` edges), as a cohort.Histogram; None when it does not look like one."""
    counts, edges = getattr(value, "histogram", None), getattr(value, "bins", None)
    if counts is None or edges is None:
        return None
    return Histogram(np_histogram=(counts, edges))


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


def to_json(obj: Mapping[str, Any]) -> str:
    """A JSON object text of ``obj`` (keys as str), for the client library."""
    return json.dumps({str(k): jsonable(v) for k, v in obj.items()}, allow_nan=False,
                      separators=(",", ":"))


def config_dict(config: Any) -> Dict[str, Any]:
    """``init(config=...)``: a dict, any Mapping, an argparse.Namespace or an object with
    ``__dict__`` (absl flags, simple namespaces)."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return {str(k): v for k, v in config.items()}
    if isinstance(config, str):
        raise TypeError("config must be a dict (config files are not supported)")
    if hasattr(config, "__dict__"):
        return {k: v for k, v in vars(config).items() if not k.startswith("_")}
    raise TypeError(f"config must be a dict, got {type(config).__name__}")
