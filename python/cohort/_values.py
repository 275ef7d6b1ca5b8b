"""Value conversion for ``run.log`` (the slow path) and JSON for config and summary.

The extension reads Python ``float``/``int``/``bool`` (and subclasses such as ``numpy.float64``)
and nested ``dict``s itself. Every other value comes to :func:`convert`, which returns a float,
a dict to flatten (an empty one: the key is skipped), a histogram or a media set, or raises a
TypeError naming the key. numpy, torch and pandas are looked up in ``sys.modules``: they are
never imported here.
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
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, Union

from ._jsonable import jsonable  # noqa: F401 (config, summary and metadata values)
from .histogram import Histogram
from .media import Table, media_set

_HINT = ("log numbers (int, float, bool, numpy scalars; a list, numpy array or tensor of numbers "
         "logs as a histogram, of one element as that number), cohort.Histogram, media "
         "(cohort.Image, cohort.Table, ...), or dicts of them")
#: Bins of the histogram a logged list, array or tensor of several numbers becomes (as the
#: vendor SDK's, which makes one of 32 bins of an array of more than 32 numbers).
SEQUENCE_BINS = 32
_EXACT = 2 ** 53  # every int up to this magnitude is a double exactly

# The str values (and datetimes, as text) met by convert in the run.log call now running on each
# thread: {thread id: [(key, text), ...]}. Run.log takes them after the call and puts them in the
# run's summary (or drops them when the call raised: a call that raises writes nothing).
texts: Dict[int, List[Tuple[str, str]]] = {}

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
    here = os.path.dirname(__file__)
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1  # the caller of run.log (or cohort.log)
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
    extension takes it (``Histogram._log_value``), or a media set (``cohort.Image`` & co., a
    list of them, a ``cohort.Table`` of a pandas DataFrame: ``media.media_set``) that the
    extension hands to ``media.sink``. A numeric list, tuple, numpy array or torch tensor of one
    element is a scalar, of several a histogram (``SEQUENCE_BINS`` bins), an empty one is
    skipped. A str (or a datetime/date, as ISO 8601 text) is no series: it returns an empty dict
    (nothing logged under ``key``, the call's other values are) and is put in ``texts`` for
    ``Run.log`` to keep in the run's summary once the call succeeded. None is skipped. Skipped
    keys get one RuntimeWarning per key. Raises TypeError naming ``key`` for anything else.
    """
    if value is None:
        _warn_once("skip", key, f"cohort: log: key {key!r}: None is not stored as a metric "
                   f"(the key is skipped, the call's other values are logged)")
        return {}
    if isinstance(value, str):
        return _text(key, value, "a str")
    if isinstance(value, Histogram):
        return value._log_value()
    if isinstance(value, (list, tuple)) or hasattr(value, "_cohort_media_type"):
        mset = media_set(key, value)
        if mset is not None:
            return mset
        if isinstance(value, (list, tuple)):
            return _sequence(key, value)
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
            if value.size == 0:
                return _skip_empty(key, value)
            if value.dtype.kind in "biuf":
                if value.size == 1:  # shape (), (1,), (1, 1)...
                    return convert(key, value.reshape(())[()])
                return _histogram(key, value)
            raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)} "
                            f"(dtype {value.dtype}); {_HINT}")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.is_complex():
            raise TypeError(f"log: key {key!r}: cannot log a {_describe(value)} (complex "
                            f"dtype {value.dtype}); log its .abs() or .real, or a number")
        n = value.numel()
        if n == 0:
            return _skip_empty(key, value)
        if n == 1:  # shape (), (1,), (1, 1)...
            item = value.item()
            return _int_as_float(key, item) if isinstance(item, int) else float(item)
        return _histogram(key, value)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(value, pd.DataFrame):
        try:
            table = Table(dataframe=value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"log: key {key!r}: cannot log this pandas.DataFrame as a "
                          f"cohort.Table: {e}") from e
        return media_set(key, table)
    dt = sys.modules.get("datetime")
    if dt is not None and isinstance(value, dt.date):  # datetime.datetime too
        return _text(key, value.isoformat(), f"a {type(value).__module__}."
                     f"{type(value).__qualname__}")
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


def _text(key: str, text: str, what: str) -> Dict[str, Any]:
    """A str logged: no series; kept for the run's summary (``texts``) by ``Run.log``."""
    texts.setdefault(threading.get_ident(), []).append((key, text))
    _warn_once("text", key, f"cohort: log: key {key!r}: {what} is not stored as a chart series; "
               f"the last value logged is kept in the run's summary (run.summary[{key!r}]), "
               f"and the call's other values are logged")
    return {}


def _skip_empty(key: str, value: Any) -> Dict[str, Any]:
    _warn_once("empty", key, f"cohort: log: key {key!r}: an empty {_describe(value)} holds no "
               f"value (the key is skipped, the call's other values are logged)")
    return {}


def _sequence(key: str, value: Union[list, tuple]) -> Any:
    """A list or tuple that holds no media: numbers (nested lists, numpy arrays and tensors of
    numbers too): a scalar when it holds one, a histogram when several; skipped when empty."""
    numbers_: List[Any] = []
    _collect_numbers(key, value, numbers_, 0)
    if not numbers_:
        return _skip_empty(key, value)
    if len(numbers_) == 1:
        return convert(key, numbers_[0])
    return _histogram(key, numbers_)


def _histogram(key: str, values: Any) -> Any:
    """The histogram (``SEQUENCE_BINS`` bins) of a logged list, array or tensor of numbers."""
    try:
        return Histogram(values, num_bins=SEQUENCE_BINS)._log_value()
    except (TypeError, ValueError, OverflowError) as e:
        raise type(e)(f"log: key {key!r}: cannot log a {_describe(values)} as a histogram: "
                      f"{e}") from e


def _collect_numbers(key: str, value: Any, out: List[Any], depth: int) -> None:
    if depth > 32:
        raise ValueError(f"log: key {key!r}: lists nested too deeply")
    for item in value:
        if isinstance(item, (bool, int, float)):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            _collect_numbers(key, item, out, depth + 1)
        elif isinstance(item, numbers.Real) and not isinstance(item, str):
            out.append(float(item))  # numpy scalars, fractions.Fraction
        elif _is_numeric_array(item):
            out.extend(_array_values(item))
        else:
            dec = sys.modules.get("decimal")
            if dec is not None and isinstance(item, dec.Decimal):
                out.append(float(item))
                continue
            raise TypeError(f"log: key {key!r}: cannot log a {type(value).__name__} holding "
                            f"{_describe(item)} ({item!r:.40}); a list logs as a histogram of "
                            f"its numbers (one number: as that number), so it must hold numbers "
                            f"only; log text as a cohort.Table or in run.summary")


def _is_numeric_array(item: Any) -> bool:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(item, (np.ndarray, np.generic)):
        return item.dtype.kind in "biuf"
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(item, torch.Tensor) and not item.is_complex()


def _array_values(item: Any) -> List[Any]:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(item, torch.Tensor):
        return item.detach().reshape(-1).cpu().tolist()
    return item.reshape(-1).tolist()


def _foreign_histogram(value: Any) -> Optional[Histogram]:
    """A histogram object of another SDK (``wandb.Histogram``: ``.histogram`` counts and
    ``.bins`` edges), as a cohort.Histogram; None when it does not look like one."""
    counts, edges = getattr(value, "histogram", None), getattr(value, "bins", None)
    if counts is None or edges is None:
        return None
    return Histogram(np_histogram=(counts, edges))


def to_json(obj: Mapping[str, Any]) -> str:
    """A JSON object text of ``obj`` (keys as str), for the client library."""
    return json.dumps({str(k): jsonable(v) for k, v in obj.items()}, allow_nan=False,
                      separators=(",", ":"))


def config_dict(config: Any) -> Dict[str, Any]:
    """``init(config=...)``: a dict, any Mapping, an argparse.Namespace or an object with
    ``__dict__`` (absl flags, simple namespaces), or the path of a YAML or JSON file
    (:func:`load_config_file`)."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return {str(k): v for k, v in config.items()}
    if isinstance(config, (str, os.PathLike)):
        return load_config_file(os.fspath(config))
    if hasattr(config, "__dict__"):
        return {k: v for k, v in vars(config).items() if not k.startswith("_")}
    raise TypeError(f"init: config must be a dict, an argparse.Namespace or the path of a YAML or "
                    f"JSON file, got {type(config).__name__}")


def load_config_file(path: str) -> Dict[str, Any]:
    """The config of ``init(config="config.yaml")``, read as the vendor SDK reads it: a YAML
    mapping (JSON is YAML too; a ``.json`` file is read without PyYAML) whose top-level keys are
    the config's. In the vendor's ``config-defaults.yaml`` form, where every key maps to
    ``{"value": ..., "desc": ...}``, each key's ``value`` is taken (and ``wandb_version`` left
    out); any other mapping is taken as it is. Raises UsageError (a ValueError) for a file that
    is missing, unreadable or holds no mapping, ImportError for a YAML file without PyYAML."""
    from .errors import UsageError

    what = f"init(config={path!r})"
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise UsageError(f"{what}: cannot read the config file: {e.strerror or e}") from e
    text = raw.decode("utf-8", errors="replace")
    if path.lower().endswith(".json"):
        try:
            loaded = json.loads(text)
        except ValueError as e:
            raise UsageError(f"{what}: not valid JSON: {e}") from e
    else:
        try:
            import yaml  # PyYAML
        except ImportError:
            raise ImportError(f"{what}: reading a YAML config file needs PyYAML: `pip install "
                              f"pyyaml` (or give a .json file, or a dict)") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise UsageError(f"{what}: not valid YAML: {e}") from e
    if loaded is None:
        warnings.warn(f"cohort: {what}: the file is empty; the run starts with no config",
                      RuntimeWarning, stacklevel=3)
        return {}
    if not isinstance(loaded, dict):
        raise UsageError(f"{what}: expected a mapping of config keys, got a "
                         f"{type(loaded).__name__}")
    loaded = {str(k): v for k, v in loaded.items()}
    version = loaded.get("wandb_version")
    items = {k: v for k, v in loaded.items() if k != "wandb_version"}
    if items and all(isinstance(v, dict) and "value" in v for v in items.values()):
        if version is not None and version != 1:
            raise UsageError(f"{what}: unknown wandb_version {version!r} (expected 1)")
        return {k: v["value"] for k, v in items.items()}
    return loaded
