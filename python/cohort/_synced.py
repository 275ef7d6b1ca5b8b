"""``run.config`` and ``run.summary``: dicts whose changes are sent to their run.

A leaf of the package: it knows a run only as the object it calls ``disabled``,
``_update_config`` and ``_update_summary`` on.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, Mapping, MutableMapping, Optional

from ._values import to_json


class _SyncedDict(MutableMapping):
    """A dict whose changes are sent to the run (config or summary).

    Items read and write as keys or attributes (``c["lr"]``, ``c.lr``). Each assignment sends
    the changed keys; ``update`` sends all its keys at once. A None value is stored as such in
    the config (argparse defaults); a deleted key is removed on the server (the config by name,
    the summary by a null).
    """

    _what = "config"

    def __init__(self, run: Any = None, items: Optional[Mapping[str, Any]] = None):
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_items", dict(items or {}))
        object.__setattr__(self, "_lock", threading.RLock())  # reentrant: del reads

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

    def _read(self) -> Dict[str, Any]:
        """What reads see (the summary adds the logged values)."""
        return self._items

    # -- MutableMapping -------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._set_many({key: value})

    def __delitem__(self, key: str) -> None:
        with self._lock:
            if key not in self._read():
                raise KeyError(key)
            run = self._run
            if self._what == "config":
                if run is not None and not run.disabled:
                    run._remove_config([key])
            else:
                self._send({key: None})
            self._items.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._read()))

    def __len__(self) -> int:
        return len(self._read())

    def __contains__(self, key: object) -> bool:
        return key in self._read()

    # -- attribute access ------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._read()[name]
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
        current = self._read()
        self._set_many({k: v for k, v in defaults.items() if k not in current})

    def as_dict(self) -> Dict[str, Any]:
        """A copy of the items as a plain dict."""
        return dict(self._read())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._read()!r})"

    def __reduce__(self):
        return (type(self), (None, dict(self._read())))


class Config(_SyncedDict):
    """``run.config``: the run's hyperparameters. In shared mode only the primary's reach the
    server (the client library drops the workers')."""

    _what = "config"


class Summary(_SyncedDict):
    """``run.summary``: values that describe the run as a whole (final accuracy, ...).

    Reads see, as the seed's SDK's do, the last logged value of each key (the client library
    keeps them: ``run._last_logged()``) and the keys the script set, the last write of each key
    winning: a key set and then logged again reads as its logged value. In shared mode only
    the primary's writes reach the server (a worker's stay in its process: the client library
    does not send them and warns once a run)."""

    _what = "summary"

    def _read(self) -> Dict[str, Any]:
        run = self._run
        last_logged = getattr(run, "_last_logged", None)
        if run is None or last_logged is None or run.disabled:
            return self._items
        with self._lock:  # an assignment's send and its _items update are seen together
            items = dict(self._items)
            # Only keys whose last write was a log: a key set after its last log is left out.
            items.update(last_logged())
        return items
