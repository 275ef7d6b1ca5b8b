"""The public read API: ``cohort.Api()`` for notebooks and scripts (docs/python-api.md).

::

    api = cohort.Api()
    for run in api.runs("alice/mnist", filters={"group": "DDP", "state": "finished"}):
        print(run.id, run.summary.get("acc"))
    run = api.run("alice/mnist/k3v9x0ab")
    df = run.history(keys=["loss"])              # exact rows, a `writer` column for shared runs
    for row in run.scan_history(keys=["loss"]):  # every row, paged: memory stays flat
        ...

Everything is read through the server's HTTP API (docs/api.md) with the URL and key that
``cohort.init`` would use. Missing runs raise ``NotFound`` (a missing project lists no runs,
with a warning), bad keys
``AuthError``, bad arguments ``UsageError``, an unreachable server ``CommError`` (all
``cohort.Error``). As in W&B, changes to a run's name, tags, config, summary, ... are saved by
``run.update()``; ``run.delete()`` deletes it.

Threading: an ``Api`` (and the runs it returns) shares one HTTP connection and is not
thread-safe; make one per thread.
"""
from __future__ import annotations

import datetime
import difflib
import json
import math
import numbers
import re
import urllib.parse
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import api_artifacts, api_history
from .api_warnings import Skipped, read_label
from .api_artifacts import ArtifactCollection, ArtifactVersion
from .api_http import _NON_FINITE, AuthError, NotFound, Transport, list_param, quote, resolve
from .api_filters import _EPOCH, build_filters, _natural_key, _sort
from .errors import CommError, Error, UsageError

__all__ = ["Api", "ArtifactCollection", "ArtifactVersion", "AuthError", "Group", "NotFound",
           "PublicRun", "Runs"]

class Api:
    """Reads runs from a Cohort server. ``base_url`` / ``api_key`` default like ``init``'s."""

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 60.0, overrides: Optional[Dict[str, str]] = None):
        overrides = overrides or {}
        url, key = resolve(base_url or overrides.get("base_url"),
                           api_key or overrides.get("api_key"))
        self._t = Transport(url, key, timeout)
        self._viewer: Optional[Dict[str, Any]] = None
        self._default_project = overrides.get("project")

    @property
    def base_url(self) -> str:
        return self._t.base_url

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> "Api":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def viewer(self) -> Dict[str, Any]:
        """{"entity", "role", "key_name"} of the API key."""
        if self._viewer is None:
            self._viewer = self._t.get("/api/v1/viewer")
        return self._viewer

    @property
    def default_entity(self) -> str:
        return self.viewer["entity"]

    def _split(self, path: str, parts: int) -> List[str]:
        """'entity/project[/run]' or 'project[/run]' -> [entity, project(, run)]."""
        if not isinstance(path, str) or not path:
            raise UsageError(f"path: expected 'entity/project' text, got {path!r}")
        segs = path.strip("/").split("/")
        if len(segs) == parts - 1:
            segs = [self.default_entity] + segs
        if len(segs) != parts or any(not s for s in segs):
            shape = "entity/project/run_id" if parts == 3 else "entity/project"
            raise UsageError(f"path: expected '{shape}' (entity optional), got {path!r}")
        return segs

    def projects(self, entity: Optional[str] = None) -> List[Dict[str, Any]]:
        return self._t.get("/api/v1/projects", {"entity": entity})["projects"]

    def runs(self, path: str, filters: Union[None, Dict[str, Any], Sequence[dict]] = None,
             order: str = "-created", per_page: int = 100) -> "Runs":
        """The runs of a project matching `filters` (see build_filters), in `order`: a lazy
        sequence that fetches `per_page` runs at a time as it is iterated or indexed. `order`:
        created, updated, name, state, group, job_type, config.<key> or summary.<key> (also
        summary_metrics.<key>), prefixed with - for descending (docs/api.md, runs "List")."""
        entity, project = self._split(path, 2)
        if not isinstance(per_page, int) or not 1 <= per_page <= 1000:
            raise UsageError("per_page: expected 1..1000")
        return Runs(self, entity, project, build_filters(filters), _sort(order), per_page)

    def _project_exists(self, entity: str, project: str) -> None:
        """A UserWarning naming `project`, with the nearest names, when the server lists no such
        project of `entity` (a project exists while it has runs): the runs listing answers a
        mistyped project as an empty one. Not an error: a project before its first run, or
        whose runs were deleted, is empty, and a script may poll it."""
        names = [p["project"] for p in self.projects(entity)]
        if project in names:
            return
        near = difflib.get_close_matches(project, names, n=3)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        warnings.warn(f"cohort: project {entity}/{project} has no runs (no such project yet)"
                      + hint, UserWarning, stacklevel=4)

    @staticmethod
    def _run_path(path: str) -> str:
        """W&B's URL form of a run, 'entity/project/runs/run_id' or the run's web address
        (``run.url``), as 'entity/project/run_id'; anything else unchanged."""
        if not isinstance(path, str):
            return path
        if re.match(r"(?i)^https?://", path):
            parts = urllib.parse.urlsplit(path)
            query = urllib.parse.parse_qs(parts.query)
            if query.get("p") and query.get("run"):  # the web UI's own address of a run
                return f"{query['p'][0]}/{query['run'][0]}"
            segs = [s for s in parts.path.split("/") if s]
            for i in range(len(segs) - 1, 1, -1):
                if segs[i - 1] == "runs" and i >= 3:
                    return "/".join([urllib.parse.unquote(s)
                                     for s in (segs[i - 3], segs[i - 2], segs[i])])
            return path
        segs = path.strip("/").split("/")
        if len(segs) == 4 and segs[2] == "runs":
            return "/".join([segs[0], segs[1], segs[3]])
        return path

    def run(self, path: str) -> "PublicRun":
        """One run, 'entity/project/run_id' (or 'project/run_id'; W&B's
        'entity/project/runs/run_id' and the run's web address too); NotFound when it is
        absent."""
        entity, project, run_id = self._split(self._run_path(path), 3)
        data = self._t.get(PublicRun.api_path(entity, project, run_id))
        return PublicRun(self, data)

    def history(self, runs: Sequence[Union[str, "PublicRun"]],
                keys: Optional[Sequence[str]] = None, writers: Optional[Sequence[str]] = None,
                max_workers: int = 8):
        """The exact history of many runs (``PublicRun`` objects or 'entity/project/run_id'
        paths) as one long pandas DataFrame: columns ``run`` (the run's id), ``writer``, ``step``,
        ``time`` and one per key, runs in the given order. Runs are fetched in parallel by up
        to `max_workers` threads, each with its own connection."""
        if isinstance(runs, (str, PublicRun)):
            runs = [runs]
        targets = []
        for r in runs:
            if isinstance(r, PublicRun):
                targets.append((r.id, r._base))
            else:
                entity, project, run_id = self._split(self._run_path(r), 3)
                targets.append((run_id, PublicRun.api_path(entity, project, run_id)))
        return api_history.runs_history_frame(self._t, targets, keys, writers, max_workers)

    def group(self, path: str, name: str) -> "Group":
        """The runs of group `name` in project 'entity/project'; NotFound when it has none."""
        entity, project = self._split(path, 2)
        groups = self._t.get(f"/api/v1/groups/{quote(entity)}/{quote(project)}")["groups"]
        info = next((g for g in groups if g["group"] == name), None)
        if info is None:
            raise NotFound(f"group {name!r} has no runs in {entity}/{project}")
        return Group(self, entity, project, info)

    # -- artifacts (docs/python-api.md, "Artifacts") --------------------------------------------
    def _artifact_project(self, entity: Optional[str], project: Optional[str],
                          what: str) -> List[str]:
        if project is None:
            project = self._default_project
        if not project:
            raise UsageError(f"{what}: no project: give 'entity/project/name' or project=")
        if entity is None:
            return self._split(project, 2)
        return [entity, project]

    def artifact(self, path: str, type: Optional[str] = None) -> ArtifactVersion:
        """A version, ``'entity/project/name:alias'`` (also ``project/name:v3``; without
        ``:``, ``latest``). NotFound when it is absent; UsageError when `type` is given and
        the collection's differs."""
        entity, project, name, version = api_artifacts.parse_artifact_path(path)
        entity, project = self._artifact_project(entity, project, f"artifact {path!r}")
        v = api_artifacts.read_version(self._t, entity, project, name, version)
        _check_type(v, type)
        return v

    def artifact_versions(self, name: str, project: Optional[str] = None
                          ) -> List[ArtifactVersion]:
        """The versions of collection `name` (``'entity/project/name'`` or `name` with
        ``project='entity/project'``), newest first."""
        entity, proj, coll, version = api_artifacts.parse_artifact_path(name)
        if ":" in name:
            raise UsageError(f"artifact_versions: expected a collection name, got {name!r}")
        if proj is not None and entity is None and project is not None:
            raise UsageError(f"artifact_versions: {name!r} names a project and project= too")
        if proj is not None:
            entity, proj = self._artifact_project(entity, proj, "artifact_versions")
        else:
            entity, proj = self._artifact_project(None, project, "artifact_versions")
        return api_artifacts.list_versions(self._t, entity, proj, coll)

    def artifact_collections(self, project: Optional[str] = None) -> List[ArtifactCollection]:
        """The artifact collections of project ``'entity/project'`` (or ``'project'``)."""
        entity, proj = self._artifact_project(None, project, "artifact_collections")
        return api_artifacts.list_collections(self._t, entity, proj)


class Runs:
    """A lazy, indexable sequence of runs; pages are fetched on demand and kept."""

    def __init__(self, api: Api, entity: str, project: str, filters: List[dict], sort: str,
                 per_page: int):
        self._api, self.entity, self.project = api, entity, project
        self.filters, self.order, self.per_page = filters, sort, per_page
        self._loaded: List[PublicRun] = []
        self._cursor: Optional[str] = None
        self._done = False
        self._total: Optional[int] = None
        self.pages_fetched = 0

    def _next_page(self) -> bool:
        if self._done:
            return False
        query = {"sort": self.order, "limit": self.per_page, "cursor": self._cursor,
                 "filters": json.dumps(self.filters) if self.filters else None}
        page = self._api._t.get(f"/api/v1/runs/{quote(self.entity)}/{quote(self.project)}",
                                query)
        self.pages_fetched += 1
        if self.pages_fetched == 1 and not page["runs"] and not page["total"]:
            self._api._project_exists(self.entity, self.project)
        self._total = page["total"]
        self._loaded += [PublicRun(self._api, r) for r in page["runs"]]
        self._cursor = page.get("next_cursor")
        self._done = not self._cursor
        return bool(page["runs"]) or not self._done

    def __iter__(self) -> Iterator["PublicRun"]:
        i = 0
        while True:
            while i >= len(self._loaded):
                if not self._next_page():
                    return
            yield self._loaded[i]
            i += 1

    def __len__(self) -> int:
        if self._total is None:
            self._next_page()
        return int(self._total or 0)

    def __getitem__(self, index: int) -> "PublicRun":
        if isinstance(index, slice):
            return list(self)[index]  # type: ignore[return-value]
        if index < 0:
            index += len(self)
        while index >= len(self._loaded) and self._next_page():
            pass
        if not 0 <= index < len(self._loaded):
            raise IndexError("runs index out of range")
        return self._loaded[index]

    def __repr__(self) -> str:
        return f"<Runs {self.entity}/{self.project} filters={self.filters}>"

    def to_dataframe(self, config: bool = True, summary: bool = True):
        """Every run of the sequence (all its pages) as a pandas DataFrame, one row per run in
        the sequence's order: ``id, name, group, job_type, state, exit_code, host, tags,
        created_ms, updated_ms, runtime_ms, writer_count``, then one ``config.<key>`` and one
        ``summary.<key>`` column per field of any run (nested objects flattened with dots, as
        the filter language names them: ``config.optim.name``), in name order; a run without
        the field has pandas' missing value there (NaN)."""
        import pandas as pd
        from . import api_columns
        if api_columns.available():
            frame = self._columns_frame(config, summary)
            if frame is not None:
                return frame
        rows = []
        for run in self:
            row: Dict[str, Any] = {
                "id": run.id, "name": run.name, "group": run.group, "job_type": run.job_type,
                "state": run.state, "exit_code": run.exit_code, "host": run.host,
                "tags": list(run.tags), "created_ms": run.created_ms,
                "updated_ms": run.updated_ms, "runtime_ms": run.runtime_ms,
                "writer_count": run.writer_count}
            # An empty config or summary adds no column (a nested empty object stays {}).
            if config and run.config != {}:
                _flatten_into(row, "config", run.config)
            if summary and run.summary != {}:
                _flatten_into(row, "summary", run.summary)
            rows.append(row)
        extra = sorted({k for r in rows for k in r if k not in _RUN_FRAME_BASE})
        return pd.DataFrame(rows, columns=_RUN_FRAME_BASE + extra)

    def _columns_frame(self, config: bool, summary: bool):
        """to_dataframe from the listing's columnar pages (docs/formats.md "Run list columns"):
        the same frame as from the JSON rows, without a Python object per run and field; None
        when the server answers JSON (one without the columns)."""
        import numpy as np
        import pandas as pd
        from . import api_columns
        path = f"/api/v1/runs/{quote(self.entity)}/{quote(self.project)}"
        pages: List[Dict[str, Any]] = []
        sizes: List[int] = []
        cursor: Optional[str] = None
        while True:
            query = {"sort": self.order, "limit": self.per_page, "cursor": cursor,
                     "filters": json.dumps(self.filters) if self.filters else None}
            ctype, body = self._api._t.get_raw(path, query, api_columns.ACCEPT)
            if ctype != api_columns.MEDIA_TYPE:
                if not pages:
                    return None  # a server without the columns: the JSON pages
                raise CommError(f"GET {path}: expected the run list columns, got {ctype!r}")
            header, columns = api_columns.decode_table(body)
            if not pages and not header.get("total") and not int(header["table"]["rows"]):
                self._api._project_exists(self.entity, self.project)
            pages.append(columns)
            sizes.append(int(header["table"]["rows"]))
            cursor = header.get("next_cursor")
            if not cursor:
                break
        # "config" / "summary": the column of runs whose whole config or summary is {}; they
        # add no column (as from the JSON rows).
        keep = [k for k in {k: None for p in pages for k in p}
                if k not in ("config", "summary")
                and (config or not k.startswith("config."))
                and (summary or not k.startswith("summary."))]
        extra = sorted(k for k in keep if k not in _RUN_FRAME_BASE)
        out: Dict[str, Any] = {}
        for name in _RUN_FRAME_BASE + extra:
            parts = [p.get(name) for p in pages]
            arrays = [x for x in parts if isinstance(x, np.ndarray)]
            if len(arrays) == len(parts) and len({a.dtype for a in arrays}) == 1:
                out[name] = np.concatenate(arrays) if arrays else np.empty(0)
            elif all(x is None or (isinstance(x, np.ndarray) and x.dtype.kind in "if")
                     for x in parts):
                out[name] = np.concatenate(
                    [np.full(n, np.nan) if x is None else x.astype(np.float64)
                     for x, n in zip(parts, sizes)])
            else:  # objects: pandas infers the column as it does from the JSON rows
                cells: List[Any] = []
                for x, n in zip(parts, sizes):
                    cells.extend([np.nan] * n if x is None else list(x))
                if name.startswith("summary."):  # "NaN", "Infinity": floats, as in run.summary
                    cells = [summary_value(c) for c in cells]
                out[name] = cells
        for name in _RUN_FRAME_BASE:  # a field null in every run (exit_code): Nones, as JSON
            col = out[name]
            if isinstance(col, np.ndarray) and col.dtype.kind == "f" and len(col) and \
                    np.isnan(col).all():
                out[name] = [None] * len(col)
        return pd.DataFrame(out, columns=_RUN_FRAME_BASE + extra)


_RUN_FRAME_BASE = ["id", "name", "group", "job_type", "state", "exit_code", "host", "tags",
                   "created_ms", "updated_ms", "runtime_ms", "writer_count"]


def summary_value(v: Any) -> Any:
    """A summary value as read: the server's spellings of non-finite numbers (the strings
    "NaN", "Infinity", "-Infinity"; docs/api.md "Conventions") as floats, in nested objects and
    lists too; anything else unchanged."""
    if isinstance(v, str):
        return _NON_FINITE.get(v, v)
    if isinstance(v, dict):
        return {k: summary_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [summary_value(x) for x in v]
    return v


def _wire(v: Any, where: str) -> Any:
    """A value to send (PATCH): non-finite floats as the server spells them, tuples as
    lists, numpy scalars as Python numbers; UsageError for what JSON cannot hold."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if getattr(getattr(v, "dtype", None), "kind", None) == "b":  # a numpy bool
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise UsageError(f"{where}: keys must be strings, got {k!r}")
            out[k] = _wire(x, f"{where}.{k}")
        return out
    if isinstance(v, (list, tuple)):
        return [_wire(x, f"{where}[{i}]") for i, x in enumerate(v)]
    raise UsageError(f"{where}: {type(v).__name__} is not a JSON value: {v!r}")


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values (as _wire gives them) are equal, 1 and 1.0 apart."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _refused(e: Error, what: str) -> Error:
    """`e` (the server's refusal of a change) again, of the same type and code, its message
    saying what was refused."""
    hint = ""
    if isinstance(e, AuthError):
        hint = " (this API key is not allowed to change runs)"
    err = type(e)(f"{what} was refused: {e}{hint}")
    err.code = e.code
    return err


def _flatten_into(out: Dict[str, Any], prefix: str, value: Any) -> None:
    """Adds `value` to `out` under `prefix`, objects flattened with '.' (empty ones kept as
    {})."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten_into(out, f"{prefix}.{k}", v)
    else:
        out[prefix] = value


# The run's fields that update() sends when they changed.
_EDITABLE = ("name", "group", "job_type", "notes", "tags", "config", "summary")


class PublicRun:
    """A run as read from the server: attributes of the run object (docs/api.md) and readers
    of its history, system metrics and console."""

    def __init__(self, api: Api, data: Dict[str, Any]):
        self._api = api
        self._load(data)

    @staticmethod
    def api_path(entity: str, project: str, run_id: str) -> str:
        return f"/api/v1/runs/{quote(entity)}/{quote(project)}/{quote(run_id)}"

    def _load(self, data: Dict[str, Any]) -> None:
        self._data = data
        # What was read, as sent: update() sends what differs from it.
        self._saved = json.loads(json.dumps({f: data.get(f) for f in _EDITABLE}))
        self.id: str = data["id"]
        self.entity: str = data["entity"]
        self.project: str = data["project"]
        self.name: str = data.get("name", "")
        self.group: str = data.get("group", "")
        self.job_type: str = data.get("job_type", "")
        self.tags: List[str] = list(data.get("tags", []))
        self.notes: str = data.get("notes", "")
        self.host: str = data.get("host", "")
        self.state: str = data.get("state", "")
        self.exit_code: Optional[int] = data.get("exit_code")
        self.config: Dict[str, Any] = data.get("config", {})
        self.summary: Dict[str, Any] = summary_value(data.get("summary", {}))
        self.metadata: Dict[str, Any] = data.get("metadata", {})
        self.created_ms: int = data.get("created_ms", 0)
        self.updated_ms: int = data.get("updated_ms", 0)
        self.runtime_ms: int = data.get("runtime_ms", 0)
        self.writer_count: int = data.get("writer_count", 0)
        self._writers: Optional[List[Dict[str, Any]]] = data.get("writers")

    @property
    def path(self) -> str:
        return f"{self.entity}/{self.project}/{self.id}"

    @property
    def created_at(self) -> str:
        """When the run was created, UTC, as W&B writes it: ``"2024-05-01T12:34:56"``."""
        at = _EPOCH + datetime.timedelta(milliseconds=self.created_ms)
        return at.strftime("%Y-%m-%dT%H:%M:%S")

    def update(self) -> "PublicRun":
        """Saves the changes made to ``name``, ``group``, ``job_type``, ``notes``, ``tags``,
        ``config`` and ``summary`` since the run was read (PATCH, docs/api.md "Get, update,
        delete"): only what changed is sent, config keys removed as ``config_unset``, summary
        keys removed as deletions. Then holds the run as the server answers it. The server's
        refusal raises (UsageError, AuthError, NotFound, ...) saying what was refused."""
        body: Dict[str, Any] = {}
        for f in ("name", "group", "job_type", "notes"):
            v = getattr(self, f)
            if not isinstance(v, str):
                raise UsageError(f"run.{f}: expected a string, got {v!r}")
            if v != (self._saved.get(f) or ""):
                body[f] = v
        tags = self.tags
        if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple)) or \
                not all(isinstance(t, str) for t in tags):
            raise UsageError(f"run.tags: expected a list of strings, got {tags!r}")
        if list(tags) != (self._saved.get("tags") or []):
            body["tags"] = list(tags)
        for f in ("config", "summary"):
            now = getattr(self, f)
            if not isinstance(now, dict):
                raise UsageError(f"run.{f}: expected a dict, got {type(now).__name__}")
            now = _wire(now, f"run.{f}")
            was = self._saved.get(f) or {}
            changed = {k: v for k, v in now.items() if k not in was or not _same(v, was[k])}
            gone = [k for k in was if k not in now]
            if f == "config":
                if gone:
                    body["config_unset"] = gone
            else:
                changed.update({k: None for k in gone})  # a null deletes a summary key
            if changed:
                body[f] = changed
        if not body:
            return self
        try:
            data = self._api._t.call("PATCH", self._base, body=body)
        except Error as e:
            raise _refused(e, f"run.update() of {self.path} ({', '.join(sorted(body))})") \
                from e
        self._load(data)
        return self

    def delete(self) -> None:
        """Deletes the run on the server (DELETE, docs/api.md "Get, update, delete"): the run
        and everything logged to it -- history, system metrics, console, writers. It cannot be
        undone. The server's refusal raises (NotFound when it is gone already)."""
        try:
            self._api._t.call("DELETE", self._base)
        except Error as e:
            raise _refused(e, f"run.delete() of {self.path}") from e

    @property
    def url(self) -> str:
        return f"{self._api.base_url}/{self.entity}/{self.project}/runs/{self.id}"

    @property
    def _base(self) -> str:
        return self.api_path(self.entity, self.project, self.id)

    @property
    def shared(self) -> bool:
        """True when more than one process writes this run."""
        return self.writer_count > 1

    @property
    def writers(self) -> List[Dict[str, Any]]:
        """[{"label", "primary", "state", "exit_code", "host", "pid", ...}] by label."""
        if self._writers is None:
            self._writers = self._api._t.get(self._base + "/writers")["writers"]
        return sorted(self._writers, key=lambda w: _natural_key(w.get("label", "")))

    def refresh(self) -> "PublicRun":
        """Reads the run again (state, summary, writers)."""
        self._load(self._api._t.get(self._base))
        return self

    def keys(self) -> List[Dict[str, Any]]:
        """Every series: [{"key", "writer", "count", "min_step", "max_step"}]."""
        return api_history.list_series(self._api._t, self._base)

    def histogram_keys(self) -> List[Dict[str, Any]]:
        """Every histogram key per writer: [{"key", "writer", "type", "count", "min_step",
        "max_step"}]."""
        return api_history.list_histogram_keys(self._api._t, self._base)

    def histograms(self, key: Union[str, Sequence[str]],
                   writers: Optional[Sequence[str]] = None, min_step: Optional[int] = None,
                   max_step: Optional[int] = None, samples: Optional[int] = None):
        """The histograms logged under `key` (or keys) as a pandas DataFrame with columns
        ``key``, ``writer``, ``step``, ``time`` (ms), ``edges`` (bins + 1 floats) and ``counts``
        (bins floats), ordered by key, writer and step. With ``samples=N``, a writer with more
        than N steps in the range gets N buckets of neighbouring steps, their counts summed
        (``last_step``, ``merged`` and ``exact`` say what each row holds: exact is False where
        steps with different bins were re-binned onto their union range, an approximation)."""
        return api_history.histogram_frame(self._api._t, self._base, key, writers, min_step,
                                           max_step, samples)

    def media_keys(self) -> List[Dict[str, Any]]:
        """Every media key per writer: [{"key", "writer", "type" (image, audio, video, html,
        table), "count", "min_step", "max_step"}]."""
        return [k for k in self._api._t.get(self._base + "/keys")["keys"]
                if k.get("type") in ("image", "audio", "video", "html", "table")]

    def media(self, key: Union[str, Sequence[str], None] = None,
              writers: Optional[Sequence[str]] = None, min_step: Optional[int] = None,
              max_step: Optional[int] = None):
        """The media rows logged under `key` (or keys; None: every media key), ordered by key,
        writer, step and index: a list of dicts (key, writer, step, index, type, mime, sha256,
        size, caption, width/height/duration_ms or nrows/ncols, uploaded, url) with
        ``download(root)`` (each file to ``root/<key>/<writer>/<step>_<index><ext>``, checked
        against its SHA-256), ``read()`` per row and ``to_dataframe()``. Every matching row:
        past the server's limit of rows an answer (100,000) they are read page by page
        (UsageError where one step of a key and writer holds more rows than that)."""
        from . import api_media
        return api_media.media(self._api._t, self._base, key, writers, min_step, max_step)

    def table(self, key: str, step: Optional[int] = None, writer: Optional[str] = None):
        """The table logged under `key` at `step` (default: the latest; of the first writer by
        label, or `writer`) as a pandas DataFrame."""
        from . import api_media
        return api_media.table(self._api._t, self._base, key, step, writer)

    def history(self, keys: Optional[Sequence[str]] = None,
                writers: Optional[Sequence[str]] = None, samples: Optional[int] = None,
                x_axis: str = "step", pandas: bool = True):
        """A pandas DataFrame: columns ``writer`` (shared runs), ``step``, ``time`` (ms since
        the epoch) and one per key (NaN where a key was not logged at that step).

        Exact rows by default. With ``samples=N``: N equal step buckets per writer, computed by
        the server from chunk summaries, with columns ``<key>`` (as W&B's sampled history
        has: the bucket's last logged value, ``<key>.last``), ``<key>.min``, ``<key>.max``,
        ``<key>.mean``, ``<key>.last`` (NaN for a bucket without a finite value);
        ``step``/``time`` are the bucket's last ones. Rows are ordered by `x_axis` (``"step"``
        or ``"time"``; W&B's ``"_step"``, ``"_timestamp"`` too), then writer.
        ``pandas=False``: the same rows as a list of dicts, one per row."""
        df = api_history.history_frame(self._api._t, self._base, keys, writers, samples,
                                       x_axis, self.shared or bool(writers))
        return df if pandas else df.to_dict("records")

    def scan_history(self, keys: Optional[Sequence[str]] = None,
                     writers: Optional[Sequence[str]] = None, page_size: int = 20_000,
                     min_step: Optional[int] = None,
                     max_step: Optional[int] = None) -> Iterator[Dict[str, Any]]:
        """Every row as a dict ``{"writer"?, "step", "time", key: value, ...}`` (keys not logged
        at a step are absent), writer by writer in label order, each by step. Pages of at most
        `page_size` points are fetched as the iterator advances: memory does not grow with the
        run's size."""
        return api_history.scan_rows(self._api._t, self._base, keys, writers, page_size,
                                     self.shared or bool(writers), min_step, max_step)

    def system_metrics(self, labels: Optional[Sequence[str]] = None,
                       keys: Optional[Sequence[str]] = None, samples: Optional[int] = None):
        """System metrics (cpu, memory, gpu.N.*) as a DataFrame with ``label``, ``time`` and a
        column per metric (no ``system/`` prefix), for the writers `labels` (default all)."""
        return api_history.system_frame(self._api._t, self._base, labels, keys, samples)

    def scan_logs(self, label: Union[None, str, Sequence[str]] = None,
                  grep: Optional[str] = None, stream: Optional[str] = None,
                  after: int = 0, page_size: int = 1000) -> Iterator[Dict[str, Any]]:
        """Console lines ``{"id", "label", "stream", "time", "text"}`` in order, paged."""
        labels = [label] if isinstance(label, str) else list(label or [])
        if stream not in (None, "stdout", "stderr"):
            raise UsageError(f"stream: expected 'stdout' or 'stderr', got {stream!r}")
        skipped = Skipped(self._base)  # lines the server had to leave out: warned, once
        while True:
            page = self._api._t.get(self._base + "/console", {
                "labels": list_param(labels), "q": grep, "stream": stream, "after": after,
                "limit": page_size})
            skipped.note(page)
            yield from page["lines"]
            if page.get("next_cursor") is None or not page["lines"]:
                return
            after = page["next_cursor"]

    def logs(self, label: Union[None, str, Sequence[str]] = None, grep: Optional[str] = None,
             stream: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every console line of the run (or of writer(s) `label`), those containing `grep`
        (case-sensitive substring) only when given."""
        return list(self.scan_logs(label=label, grep=grep, stream=stream))

    def logged_artifacts(self) -> List[ArtifactVersion]:
        """The artifact versions this run logged (lineage ``output``)."""
        return self._artifacts("output")

    def used_artifacts(self) -> List[ArtifactVersion]:
        """The artifact versions this run used (``use_artifact``; lineage ``input``)."""
        return self._artifacts("input")

    def _artifacts(self, direction: str) -> List[ArtifactVersion]:
        listed = self._api._t.get(self._base + "/artifacts")["artifacts"]
        out, seen = [], set()
        for a in listed:
            key = (a["name"], a["version"])
            if a.get("direction") != direction or key in seen:
                continue
            seen.add(key)
            out.append(ArtifactVersion(self._api._t, a))  # of any project of the entity
        return out

    def aggregate(self, key: str, samples: Optional[int] = None,
                  writers: Optional[Sequence[str]] = None):
        """`key` across the writers of this (shared) run: see ``rank_aggregate``."""
        return rank_aggregate(self._api._t, self._base + "/ranks/aggregate", {}, key, samples,
                              writers)

    def __repr__(self) -> str:
        return f"<Run {self.path} ({self.state})>"


class Group:
    """The runs of one group of a project and aggregates across them (and their writers)."""

    def __init__(self, api: Api, entity: str, project: str, info: Dict[str, Any]):
        self._api, self.entity, self.project = api, entity, project
        self.name: str = info["group"]
        self.run_count: int = info.get("runs", 0)
        self.states: Dict[str, int] = info.get("states", {})
        self.job_types: Dict[str, int] = info.get("job_types", {})

    @property
    def runs(self) -> Runs:
        return self._api.runs(f"{self.entity}/{self.project}", filters={"group": self.name})

    def aggregate(self, key: str, samples: Optional[int] = None,
                  writers: Optional[Sequence[str]] = None):
        """`key` across every writer of every run of the group: see ``rank_aggregate``."""
        return rank_aggregate(self._api._t,
                              f"/api/v1/groups/{quote(self.entity)}/{quote(self.project)}"
                              "/ranks/aggregate", {"group": self.name}, key, samples, writers)

    def __repr__(self) -> str:
        return f"<Group {self.entity}/{self.project}/{self.name} ({self.run_count} runs)>"



def _check_type(v: ArtifactVersion, type: Optional[str]) -> None:
    if type is not None and v.type != type:
        raise UsageError(f"artifact {v.qualified_name} has type {v.type!r}, not {type!r}")


_AGG_COLUMNS = ["step", "step_max", "mean", "min", "max", "median", "spread", "members", "count"]
_MAX_BUCKETS = 10_000


def rank_aggregate(t: Transport, path: str, query: Dict[str, Any], key: str,
                   samples: Optional[int], writers: Optional[Sequence[str]]):
    """One metric across members (writers of a run, or of every run of a group) through the
    server's rank-aggregation route (docs/api.md, "Rank aggregation"): a DataFrame with
    ``step`` (first step in the bucket), ``step_max``, ``mean``, ``min``, ``max``, ``median``
    (across the members' means), ``spread`` (max - min), ``members`` (members with a point) and
    ``count`` (points).

    Without `samples` the rows are exact, one per step: the range is read in windows of 10,000
    steps, each with one-step buckets. With ``samples=N``, at most N buckets on the server's
    aligned grid (see the route's ``bucket_width``)."""
    import pandas as pd

    if not isinstance(key, str) or not key:
        raise UsageError("aggregate: key must be a non-empty string")
    if samples is not None and (not isinstance(samples, int) or not 1 <= samples <= _MAX_BUCKETS):
        raise UsageError(f"samples: expected 1..{_MAX_BUCKETS}, got {samples!r}")
    q = dict(query, key=key, writers=list_param(writers) if writers else None)
    buckets: List[Dict[str, Any]] = []
    skipped = Skipped(path, label=(f"group {query['group']!r} of {read_label(path)}"
                                   if "group" in query else None))

    def get(query: Dict[str, Any]) -> Dict[str, Any]:
        answer = t.get(path, query)
        skipped.note(answer)
        return answer

    if samples is not None:
        buckets = get(dict(q, buckets=samples))["buckets"]
    else:
        whole = get(dict(q, buckets=1))["buckets"]
        if whole:
            lo, hi = whole[0]["step_min"], whole[-1]["step_max"]
            start = lo
            while start <= hi:
                end = min(hi, start + _MAX_BUCKETS - 1)
                page = get(dict(q, buckets=end - start + 1, min_step=start, max_step=end))
                if not page.get("exact"):
                    raise UsageError(f"aggregate: the server did not answer one-step buckets "
                                     f"for steps {start}..{end}")
                buckets += page["buckets"]
                start = end + 1
    rows = [[b["step_min"], b["step_max"]] + [api_history.number(b[c]) if b[c] is not None
                                              else float("nan")
                                              for c in ("mean", "min", "max", "median", "spread")]
            + [b["members"], b["count"]] for b in buckets]
    return pd.DataFrame(rows, columns=_AGG_COLUMNS)
