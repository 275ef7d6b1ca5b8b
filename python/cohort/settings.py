"""``cohort.Settings``: the seed SDK's settings object, with the fields Cohort understands.

The fields users of the seed's SDK pass for distributed training keep their names::

    cohort.Settings(mode="shared", x_label="rank_0", x_primary=True,
                    x_stats_gpu_device_ids=[0, 1], x_update_finish_state=False,
                    init_timeout=30, finish_timeout=30, x_stats_sampling_interval=15)

Settings of the seed's SDK that mean nothing here (``start_method``, ``silent``, ...) are
accepted and ignored, so that existing scripts run unchanged; any other unknown name is kept
and reported with a warning.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

_MODES = ("online", "offline", "disabled", "shared")
# The seed SDK's older names for modes.
_MODE_ALIASES = {"run": "online", "dryrun": "offline"}

# name -> default. Every field is optional: None means "decide from the environment".
_FIELDS: Dict[str, Any] = {
    "mode": None,                       # online | offline | disabled | shared
    "x_label": None,                    # writer label (default rank_<RANK> or <host>-<random>)
    "x_primary": None,                  # primary writer of a shared run (default RANK == 0)
    "x_update_finish_state": None,      # False: this writer never ends the run (default x_primary)
    "x_stats_gpu_device_ids": None,     # GPUs the system monitor samples (default all)
    "x_stats_sampling_interval": None,  # seconds between system samples (default 15, 0 off)
    "x_disable_stats": None,            # True: no system metrics for this writer
    "x_agent": None,                    # "agent" (default), "private" (or "inprocess")
    "init_timeout": None,               # seconds init() may take (default 30)
    "finish_timeout": None,             # seconds finish() may take (default 30)
    "console": None,                    # "off": do not capture stdout/stderr lines
    "base_url": None,                   # server URL (default COHORT_BASE_URL, config, local)
    "api_key": None,                    # API key (default COHORT_API_KEY, config)
    "entity": None,
    "project": None,
    "run_id": None,
    "run_name": None,
    "run_group": None,
    "run_job_type": None,
    "run_notes": None,
    "run_tags": None,
    "root_dir": None,                   # local data directory (as init(dir=))
    "reinit": None,                     # as init(reinit=), when init does not give it
}

# Settings of the seed's SDK that have no meaning in Cohort; accepted silently.
_IGNORED = frozenset({
    "start_method", "silent", "quiet", "show_info", "show_warnings", "show_errors",
    "disable_code", "disable_git", "disable_job_creation", "save_code", "code_dir", "program",
    "anonymous", "allow_val_change", "force", "sync_tensorboard", "console_multipart",
    "x_disable_meta", "x_disable_machine_info", "x_service_wait", "_service_wait",
    "x_stats_open_metrics_endpoints", "x_file_stream_timeout_seconds", "heartbeat_seconds",
    "_disable_meta", "_disable_machine_info", "init_policy", "host", "username",
    "email", "notebook_name", "_require_service", "x_require_legacy_service",
})
_ALIASES = {"_disable_stats": "x_disable_stats", "_stats_sample_rate_seconds":
            "x_stats_sampling_interval", "x_stats_sampling_interval_seconds":
            "x_stats_sampling_interval", "_stats_gpu_device_ids": "x_stats_gpu_device_ids"}


def _normalize_mode(mode: Optional[str]) -> Optional[str]:
    if mode is None:
        return None
    if not isinstance(mode, str):
        raise TypeError(f"Settings: mode must be a str, got {type(mode).__name__}")
    mode = _MODE_ALIASES.get(mode, mode)
    if mode not in _MODES:
        raise ValueError(f"Settings: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    return mode


def _check_field(name: str, value: Any) -> Any:
    """Validates and normalises one field value; raises TypeError / ValueError."""
    if value is None:
        return None
    if name == "mode":
        return _normalize_mode(value)
    if name in ("x_primary", "x_update_finish_state", "x_disable_stats"):
        if not isinstance(value, bool):
            raise TypeError(f"Settings: {name} must be a bool, got {type(value).__name__}")
        return value
    if name == "x_stats_gpu_device_ids":
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError("Settings: x_stats_gpu_device_ids must be a list of ints")
        ids: List[int] = []
        for v in value:
            if isinstance(v, bool) or not hasattr(v, "__index__"):
                raise TypeError("Settings: x_stats_gpu_device_ids must be a list of ints")
            if v.__index__() < 0:
                raise ValueError("Settings: x_stats_gpu_device_ids must be >= 0")
            ids.append(v.__index__())
        return ids
    if name in ("x_stats_sampling_interval", "init_timeout", "finish_timeout"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"Settings: {name} must be a number of seconds")
        if value < 0 or (value == 0 and name != "x_stats_sampling_interval"):
            raise ValueError(f"Settings: {name} must be > 0")
        return float(value)
    if name == "x_agent":
        if value not in ("agent", "private", "inprocess"):
            raise ValueError("Settings: x_agent must be 'agent', 'private' or 'inprocess'")
        return value
    if name == "run_tags":
        if isinstance(value, str):
            return [value]
        return [str(t) for t in value]
    if name == "console":
        return str(value)
    if name == "reinit":
        if not isinstance(value, (bool, str)):
            raise TypeError(f"Settings: reinit must be a bool or a str, got "
                            f"{type(value).__name__}")
        return value
    if not isinstance(value, str):
        raise TypeError(f"Settings: {name} must be a str, got {type(value).__name__}")
    return value


class Settings:
    """Settings of a run (``cohort.init(settings=cohort.Settings(...))``) or of ``setup()``.

    Every field defaults to None, meaning "from the environment, the config file that
    ``cohort login`` wrote, or the default". See the module docstring for the fields.
    """

    def __init__(self, **kwargs: Any) -> None:
        values = dict.fromkeys(_FIELDS)
        unknown: Dict[str, Any] = {}
        for name, value in kwargs.items():
            name = _ALIASES.get(name, name)
            if name in _FIELDS:
                values[name] = _check_field(name, value)
            elif name in _IGNORED:
                continue
            else:
                unknown[name] = value
        if unknown:
            warnings.warn("cohort.Settings ignores unknown settings: " + ", ".join(sorted(unknown)),
                          UserWarning, stacklevel=2)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_unknown", unknown)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        name = _ALIASES.get(name, name)
        if name in values:
            return values[name]
        raise AttributeError(f"cohort.Settings has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        name = _ALIASES.get(name, name)
        if name in _FIELDS:
            self._values[name] = _check_field(name, value)
        elif name not in _IGNORED:
            raise AttributeError(f"cohort.Settings has no field {name!r}")

    def update(self, other: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> None:
        """Sets the given fields (a dict or another Settings, plus keyword arguments)."""
        items: Dict[str, Any] = {}
        if isinstance(other, Settings):
            items.update(other.to_dict(non_default=True))
        elif other is not None:
            items.update(other)
        items.update(kwargs)
        checked = Settings(**items)
        for name, value in checked.to_dict(non_default=True).items():
            self._values[name] = value

    def to_dict(self, non_default: bool = False) -> Dict[str, Any]:
        """The fields as a dict (only those set when ``non_default``)."""
        return {k: v for k, v in self._values.items() if not non_default or v is not None}

    def __iter__(self) -> Iterator[Tuple[str, Any]]:
        return iter(self._values.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values == other._values

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._values.items() if v is not None)
        return f"cohort.Settings({fields})"

    def __reduce__(self):  # plain data: picklable for child processes
        return (_restore_settings, (self.to_dict(non_default=True),))

    @property
    def shared(self) -> bool:
        """True when ``mode="shared"``."""
        return self._values["mode"] == "shared"


def _restore_settings(values: Dict[str, Any]) -> Settings:
    return Settings(**values)


def coerce_settings(settings: Any) -> Settings:
    """``init(settings=...)`` accepts a Settings, a dict of fields, or None."""
    if settings is None:
        return Settings()
    if isinstance(settings, Settings):
        return settings
    if isinstance(settings, Mapping):
        return Settings(**settings)
    raise TypeError(f"settings must be a cohort.Settings or a dict, got {type(settings).__name__}")
