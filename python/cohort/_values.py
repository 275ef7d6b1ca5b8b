"""Value conversion for ``run.log`` (the slow path) and JSON for config and summary.

The extension reads Python ``float``/``int``/``bool`` (and subclasses such as ``numpy.float64``)
and nested ``dict``s itself. Every other value comes to :func:`convert`, which returns a float,
a dict to flatten (an empty one: the key is skipped), or raises a TypeError naming the key. numpy
and torch are looked up in ``sys.modules``: they are never imported here.
"""
from __future__ import annotations

import enum
import json
import math
import numbers
import os
import sys
import threading
import warnings
from typing import Any, Dict, Mapping, Optional, Set, Tuple, Union

from .histogram import Histogram
from .media import media_set

_HINT = ("log numbers: int, float, bool, numpy scalars, numpy arrays or tensors of one "
         "element, or dicts of them")
_EXACT = 2 ** 53  # every int up to this magnitude is a double exactly

# Keys already warned about (skipped str/None values, ints rounded to a double): one warning per
# key and process, however many calls log it.
_warned: Set[Tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(what: str, key: str, message: str) -> None:
    with _warned_lock:
        if (what, key) in _warned:
            return
        if len(_warned) < 10000:  # keys made up at every step must not grow it for ever
            _warned.add((what, key))
    level, frame = 1, sys._getframe(0)
    while frame is not None and frame.f_code.co_filename == __file__:  # the caller of run.log
        frame, level = frame.f_back, level + 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)


def _int_as_float(key: str, value: int) -> float:
    """``value`` as a double, with one warning per key when the double is not exactly it."""
    f = float(value)
    if abs(value) > _EXACT and int(f) != value:
        _warn_once("int", key, f"cohort: log: key {key!r}: the int {value} is not exactly "
                   f"representable as a float64 and is stored rounded to {f!r}")
    return f


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
    list of them: ``media.media_set``) that the extension hands to ``media.sink``. A str or None
    is not a metric: it returns an empty dict (nothing logged under ``key``, the call's other
    values are) with one RuntimeWarning per key. Raises TypeError naming ``key`` for anything
    else.
    """
    if value is None or isinstance(value, str):
        what = "None" if value is None else "a str"
        _warn_once("skip", key, f"cohort: log: key {key!r}: {what} is not stored as a metric "
                   f"(the key is skipped, the call's other values are logged); put text in "
                   f"run.summary, run.config or a cohort.Table")
        return {}
    if isinstance(value, Histogram):
        return value._log_value()
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
            if isinstance(value, np.integer):
                return _int_as_float(key, int(value))
            if isinstance(value, (np.floating, np.bool_)):
                return float(value)
        elif isinstance(value, np.ndarray):
            if value.size == 1 and value.dtype.kind in "biuf":  # shape (), (1,), (1, 1)...
                return convert(key, value.reshape(())[()])
            raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)} "
                            f"(dtype {value.dtype}); {_HINT}")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.numel() == 1 and not value.is_complex():  # shape (), (1,), (1, 1)...
            item = value.item()
            return _int_as_float(key, item) if isinstance(item, int) else float(item)
        raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)}; log a tensor of "
                        f"one element (e.g. loss.detach(), t.mean()) or a number")
    if isinstance(value, int):  # the extension reads ints itself (rounding them): not reached
        return _int_as_float(key, value)
    if isinstance(value, numbers.Real):  # fractions.Fraction, other Real types
        return float(value)
    dec = sys.modules.get("decimal")
    if dec is not None and isinstance(value, dec.Decimal):  # not a numbers.Real
        return float(value)
    if isinstance(value, bytes):
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
