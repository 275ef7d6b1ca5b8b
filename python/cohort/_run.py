"""``cohort.Run`` and its dict-like ``config`` and ``summary``.

``Run`` subclasses the extension's handle, so ``run.log`` is the C++ method itself. Everything
else (context manager, pickling, config/summary objects, finish bookkeeping) lives here.
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Dict, Iterator, List, Mapping, MutableMapping, Optional, Sequence, Tuple

from . import _state
from ._native import native
from ._values import to_json
from .settings import Settings


class _SyncedDict(MutableMapping):
    """A dict whose changes are sent to the run (config or summary).

    Items read and write as keys or attributes (``c["lr"]``, ``c.lr``). Each assignment sends
    the changed keys; ``update`` sends all its keys at once. A deleted key is sent as null,
    which removes it on the server.
    """

    _what = "config"

    def __init__(self, run: Optional["Run"] = None, items: Optional[Mapping[str, Any]] = None):
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_items", dict(items or {}))
        object.__setattr__(self, "_lock", threading.Lock())

    # -- sync ---------------------------------------------------------------------------------
    def _send(self, changes: Mapping[str, Any]) -> None:
        run = self._run
        if run is None or run.disabled or not changes:
            return
        text = to_json(changes)
        if self._what == "config":
            run._update_config(text)
        else:
            run._update_summary(text)

    def _set_many(self, changes: Mapping[str, Any]) -> None:
        for key in changes:
            if not isinstance(key, str):
                raise TypeError(f"{self._what}: keys must be str, got {type(key).__name__}")
        with self._lock:
            self._send(changes)
            self._items.update(changes)

    # -- MutableMapping -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._set_many({key: value})

    def __delitem__(self, key: str) -> None:
        with self._lock:
            if key not in self._items:
                raise KeyError(key)
            self._send({key: None})
            del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # -- attribute access ------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(f"{self._what} has no key {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    # -- dict-like extras ------------------------------------------------------------------------
    def update(self, other: Any = None, allow_val_change: Optional[bool] = None,
               **kwargs: Any) -> None:
        """Sets many keys with one message to the server (``allow_val_change`` is accepted for
        compatibility; values may always change)."""
        changes: Dict[str, Any] = {}
        if other is not None:
            if isinstance(other, Mapping):
                changes.update(other)
            elif hasattr(other, "keys"):
                changes.update({k: other[k] for k in other.keys()})
            elif hasattr(other, "__dict__"):
                changes.update({k: v for k, v in vars(other).items() if not k.startswith("_")})
            else:
                changes.update(other)
        changes.update(kwargs)
        self._set_many(changes)

    def setdefaults(self, defaults: Mapping[str, Any]) -> None:
        """Sets the keys of ``defaults`` that are not set yet."""
        self._set_many({k: v for k, v in defaults.items() if k not in self._items})

    def as_dict(self) -> Dict[str, Any]:
        """A copy of the items as a plain dict."""
        return dict(self._items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    def __reduce__(self):
        return (type(self), (None, dict(self._items)))


class Config(_SyncedDict):
    """``run.config``: the run's hyperparameters. In shared mode only the primary's reach the
    server (the client library drops the workers')."""

    _what = "config"


class Summary(_SyncedDict):
    """``run.summary``: values that describe the run as a whole (final accuracy, ...)."""

    _what = "summary"


def _exit_state_for(exc: Optional[BaseException]) -> Tuple[int, str]:
    """(exit code, forced state) for an exception leaving a run's scope."""
    if exc is None:
        return 0, ""
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            return 0, ""
        if isinstance(code, bool) or not isinstance(code, int):
            return 1, ""
        return code, ""
    if isinstance(exc, KeyboardInterrupt):
        return 130, "killed"
    return 1, ""


class Run(native.Run):
    """A run, or this process's writer in a shared run. Made by :func:`cohort.init`.

    ``run.log(dict, step=None, commit=True)`` logs numbers (nested dicts are flattened as
    ``a/b``); ``run.config`` and ``run.summary`` are dicts that sync to the server;
    ``run.finish()`` ends the writer. As a context manager the run finishes at the end of the
    block, as failed (exit code 1) when an exception leaves it.
    """

    def __init__(self, native_settings: Any = None, *, settings: Optional[Settings] = None,
                 init_args: Optional[Dict[str, Any]] = None, config: Optional[Dict] = None,
                 local_id: Optional[str] = None) -> None:
        if native_settings is None:
            super().__init__()
        else:
            super().__init__(native_settings)
        self._settings = settings if settings is not None else Settings()
        self._init_args = dict(init_args or {})
        self._local_id = local_id or ""
        self._pid = os.getpid()
        self._finish_lock = threading.Lock()
        self._py_finished = False
        self._joined_from: Optional[str] = None  # parent's label when joined as a child writer
        self._config = Config(self, config or {})
        self._summary = Summary(self)

    # -- identity -------------------------------------------------------------------------------
    @property
    def id(self) -> str:  # type: ignore[override]
        """The run id (shared by all writers of a shared run)."""
        return super().id or self._local_id

    @property
    def name(self) -> str:
        """The run's display name (the id when it has none). Assigning renames the run."""
        return self._name or self._init_args.get("name") or self.id

    @name.setter
    def name(self, value: str) -> None:
        self._set_field("name", str(value))

    @property
    def group(self) -> Optional[str]:
        """The group given to init (None for a worker that joined by id); assignable."""
        return self._init_args.get("group")

    @group.setter
    def group(self, value: str) -> None:
        self._set_field("group", str(value))
        self._init_args["group"] = str(value)

    @property
    def job_type(self) -> Optional[str]:
        """The job type given to init; assignable."""
        return self._init_args.get("job_type")

    @job_type.setter
    def job_type(self, value: str) -> None:
        self._set_field("job_type", str(value))
        self._init_args["job_type"] = str(value)

    @property
    def tags(self) -> Tuple[str, ...]:
        """The run's tags; assigning a sequence of strings replaces them."""
        return tuple(self._init_args.get("tags") or ())

    @tags.setter
    def tags(self, value: Sequence[str]) -> None:
        if isinstance(value, str) or not all(isinstance(t, str) for t in value):
            raise TypeError("tags: expected a sequence of str")
        tags = list(value)
        self._set_tags(tags)
        self._init_args["tags"] = tags

    @property
    def notes(self) -> Optional[str]:
        """The run's notes; assignable."""
        return self._init_args.get("notes")

    @notes.setter
    def notes(self, value: str) -> None:
        self._set_field("notes", str(value))
        self._init_args["notes"] = str(value)

    @property
    def settings(self) -> Settings:
        """The Settings the run was started with."""
        return self._settings

    @property
    def config(self) -> Config:
        """The run's config (dict-like; updates sync to the server)."""
        return self._config

    @property
    def summary(self) -> Summary:
        """The run's summary (dict-like; updates sync to the server)."""
        return self._summary

    @property
    def finished(self) -> bool:
        """True once this writer has finished (in this process)."""
        return self._py_finished

    @property
    def path(self) -> str:
        """``entity/project/id``."""
        return f"{self.entity}/{self.project}/{self.id}"

    # -- seed SDK compatibility ------------------------------------------------------------------
    def define_metric(self, name: str, *args: Any, **kwargs: Any) -> None:
        """Accepted for compatibility; Cohort keeps steps per writer and every series raw."""
        return None

    def watch(self, *args: Any, **kwargs: Any) -> None:
        """Accepted for compatibility; gradients and parameters are not logged automatically."""
        return None

    # -- lifecycle -------------------------------------------------------------------------------
    def finish(self, exit_code: Optional[int] = None, quiet: Optional[bool] = None) -> None:
        """Ends this writer: flushes what is pending (bounded by ``finish_timeout``) and reports
        the exit code (0: finished, else failed). Idempotent."""
        self._finish_with(0 if exit_code is None else int(exit_code), "")

    def _finish_with(self, exit_code: int, state: str) -> None:
        with self._finish_lock:
            if self._py_finished:
                return
            self._py_finished = True
        _state.forget(self)
        error = self._finish(exit_code, state)
        if error:
            warnings.warn(f"cohort: run {self.id}: finish did not complete: {error}",
                          RuntimeWarning, stacklevel=3)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        code, state = _exit_state_for(exc)
        self._finish_with(code, state)
        return False

    # -- processes ---------------------------------------------------------------------------
    def __reduce__(self):
        """A Run sent to another process (multiprocessing, pickle) becomes, there, a writer of
        the same run labelled ``<this label>-<pid>``."""
        return (_state.restore_run, (self._handoff_state(),))

    def _handoff_state(self) -> Dict[str, Any]:
        s = self._settings.to_dict(non_default=True)
        return {
            "disabled": self.disabled,
            "id": self.id,
            "entity": self.entity,
            "project": self.project,
            "label": self.label,
            "name": self.name,
            "parent_pid": self._pid,
            "mode": "offline" if self._init_args.get("mode") == "offline" or
                    s.get("mode") == "offline" else None,
            "dir": self._init_args.get("dir"),
            "settings": {k: v for k, v in s.items()
                         if k in ("base_url", "api_key", "init_timeout", "finish_timeout",
                                  "x_stats_sampling_interval", "x_disable_stats", "x_agent",
                                  "console", "root_dir")},
        }

    def __repr__(self) -> str:
        state = "finished" if self._py_finished else ("disabled" if self.disabled else "running")
        return f"<cohort.Run {self.path} label={self.label!r} {state}>"


def live_runs() -> List[Run]:
    """Runs of this process that have not finished (for tests and tools)."""
    return list(_state.live())
