"""``cohort.Run``, and a run handed to another process (pickling).

``Run`` subclasses the extension's handle: ``run.log`` is a short method over the C++ one (it
keeps the str values a call logged in the summary). Everything else (context manager, pickling,
finish bookkeeping) lives here; the vendor SDK's other attributes (``dir``, ``resumed``,
``url``, ``save``, ...) in ``_run_compat``, its ``config`` and ``summary`` in ``_synced``, the
registry of live runs in ``_state``.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _state
from ._client_settings import native_settings
from ._native import native
from ._run_compat import RunCompat
from ._synced import Config, Summary
from ._values import texts as _texts
from .errors import UsageError
from .settings import Settings, _normalize_mode


_native_log = native.Run.log
# Logged str values reach the server's summary at most this often (and at finish), as the client
# library sends the last logged numbers.
_TEXT_FLUSH_S = 10.0
_clock = time.monotonic  # tests move it


class Run(RunCompat, native.Run):
    """A run, or this process's writer in a shared run. Made by :func:`cohort.init`.

    ``run.log(dict, step=None, commit=None)`` logs numbers (nested dicts are flattened as
    ``a/b``; with ``step``, commit defaults to False, so calls at that step merge into its row);
    ``run.config`` and ``run.summary`` are dicts that sync to the server; ``run.finish()`` ends
    the writer. As a context manager the run finishes at the end of the
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
        self._artifacts: List[Any] = []  # logged by this process (cohort.Artifact)
        held_config, held_summary, filled = self._take_run_fields()
        # A resumed run's config as the server holds it, init's keys over it: read back, not
        # sent again (only assignments send).
        self._config = Config(self, {**held_config, **(config or {})})
        self._summary = Summary(self, held_summary)
        self._starting_step = 0 if self.disabled else self.step
        self._resumed = self._was_resumed(held_config, held_summary, config or {}, filled)

    def _take_run_fields(self) -> Tuple[Dict[str, Any], Dict[str, Any], bool]:
        """The run's fields as the server held them when this writer joined (a resumed run's):
        its group, job type, notes and tags where init did not give them; returns its config,
        its summary (empty when not known) and whether the server gave any of those fields
        that init did not (the run existed before)."""
        text = "" if self.disabled else self._run_fields
        try:
            fields = json.loads(text) if text else {}
        except ValueError:
            fields = {}
        if not isinstance(fields, dict):
            return {}, {}, False
        filled = False
        for key in ("group", "job_type", "notes"):
            value = fields.get(key)
            if self._init_args.get(key) is None and isinstance(value, str) and value:
                self._init_args[key] = value
                filled = True
        tags = fields.get("tags")
        if self._init_args.get("tags") is None and isinstance(tags, list) and tags:
            self._init_args["tags"] = [t for t in tags if isinstance(t, str)]
            filled = True
        config, summary = fields.get("config"), fields.get("summary")
        return (config if isinstance(config, dict) else {},
                summary if isinstance(summary, dict) else {}, filled)

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
        """The group given to init, or the run's on the server when it was resumed (or joined
        by id) without one; None when it has none. Assignable."""
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

    # -- logging ---------------------------------------------------------------------------------
    def log(self, data: Any, step: Optional[int] = None, commit: Optional[bool] = None) -> None:
        """Logs a dict of key -> value at the writer's current step (or ``step``); ``commit``
        (default: True without ``step``, False with it) then moves on to the next step.

        The extension's ``log`` does the work (docs/python.md, "The run"); a str value (or a
        datetime, as ISO 8601 text) is no series: once the call succeeded, the last one of each
        key goes to the run's summary (``run.summary[key] = value``). A call that raises logs
        nothing, and keeps nothing in the summary either."""
        if _texts:  # left by a conversion outside run.log (the extension's _flatten)
            _texts.pop(threading.get_ident(), None)
        try:
            _native_log(self, data, step, commit)
        except BaseException:
            if _texts:
                _texts.pop(threading.get_ident(), None)
            raise
        if _texts:
            self._keep_texts()

    def _keep_texts(self) -> None:
        """The str values the call just logged: the last one of each key goes to the run's
        summary. Reads see it at once; the server gets a value only when it changed, at most
        once every ``_TEXT_FLUSH_S`` (as the client library sends logged values) and at finish:
        a script logging {"phase": "train"} at every step sent a summary update per call."""
        texts = _texts.pop(threading.get_ident(), None)
        if not texts:
            return
        state = self.__dict__.get("_text_state")
        if state is None:
            state = self.__dict__.setdefault(
                "_text_state", {"lock": threading.Lock(), "sent": {}, "pending": {}, "at": None})
        with state["lock"]:
            for key, value in texts:
                if state["sent"].get(key) != value or key in state["pending"]:
                    state["pending"][key] = value
            if not state["pending"]:
                return
            with self.summary._lock:  # what reads see, before it is sent
                self.summary._items.update(state["pending"])
            now = _clock()
            if state["at"] is not None and now - state["at"] < _TEXT_FLUSH_S:
                return
        self._flush_texts()

    def _flush_texts(self) -> None:
        """Sends the texts kept since the last send (see _keep_texts)."""
        state = self.__dict__.get("_text_state")
        if state is None:
            return
        with state["lock"]:
            changes = dict(state["pending"])
            state["pending"].clear()
            state["at"] = _clock()
            state["sent"].update(changes)
        if not changes:
            return
        try:
            self.summary.update(changes)
        except Exception as e:  # noqa: BLE001 - the values were logged; only the summary missed
            keys = ", ".join(sorted(repr(k) for k in changes))
            warnings.warn(f"cohort: run {self.id}: the text logged under {keys} was not kept in "
                          f"the run's summary: {e}", RuntimeWarning, stacklevel=3)

    # -- seed SDK compatibility ------------------------------------------------------------------
    def define_metric(self, name: str, step_metric: Any = None, step_sync: Optional[bool] = None,
                      hidden: Optional[bool] = None, summary: Optional[str] = None,
                      goal: Optional[str] = None, overwrite: Optional[bool] = None,
                      **kwargs: Any) -> None:
        """Accepted for compatibility; Cohort keeps steps per writer and every series raw.
        ``summary=`` other than ``"last"`` is not applied (the client library keeps the last
        logged value of each key in the run's summary): a RuntimeWarning says so, once a run."""
        if summary is not None and not self.__dict__.get("_summary_warned"):
            aggregates = {a.strip().lower() for a in str(summary).split(",") if a.strip()}
            if aggregates - {"last"}:
                self._summary_warned = True
                level, frame = 1, sys._getframe(0)  # the user's call (cohort.define_metric too)
                while frame is not None and \
                        os.path.dirname(frame.f_code.co_filename) == os.path.dirname(__file__):
                    frame, level = frame.f_back, level + 1
                warnings.warn(
                    f"cohort: define_metric({name!r}, summary={summary!r}) is not applied: the "
                    f"run's summary keeps the last logged value of each key (a value set in "
                    f"run.summary is replaced by the key's next log); to keep another value, "
                    f"set it after the key's last log, or under a key of its own (e.g. "
                    f"run.summary['best_{name}'])", RuntimeWarning,
                    stacklevel=level)
        return None

    def watch(self, models: Any, criterion: Any = None, log: Optional[str] = "gradients",
              log_freq: int = 1000, idx: Optional[int] = None, log_graph: bool = False,
              num_bins: int = 64) -> None:
        """Logs histograms of a torch model's (or list of models') gradients
        (``gradients/<name>``), parameters (``parameters/<name>``) or both (``log="all"``) every
        ``log_freq``-th training forward pass, at the step of the loop's next ``log``.
        ``criterion`` and ``log_graph`` are accepted for compatibility and ignored."""
        from ._watch import watch
        watch(self, models, criterion, log, log_freq, idx, log_graph, num_bins)

    def unwatch(self, models: Any = None) -> None:
        """Removes the hooks of ``watch`` (of every watched model when ``models`` is None)."""
        from ._watch import unwatch
        unwatch(self, models)

    # -- alerts (docs/python.md, "Alerts") ------------------------------------------------------
    def alert(self, title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
        """Raises an alert from the training code: ``title`` (1-256 bytes), ``text`` (up to
        64 KiB), ``level`` ``"INFO"`` (default), ``"WARN"`` or ``"ERROR"`` (or a
        ``cohort.AlertLevel``). It reaches the server through the node agent like logged values
        (in order after them; kept by the agent until the server has it); each call sent opens a
        new alert on the server (closing the open one of that writer and title) and notifies
        the project's webhooks. ``wait_duration`` (seconds, or a ``datetime.timedelta``): a call whose title
        this run sent less than that long ago is not sent. Bad arguments raise ``TypeError`` or
        ``cohort.UsageError`` naming them; a disabled run sends nothing. An alert the node's
        agent cannot take (an older agent still running) is not sent: a ``RuntimeWarning`` says
        so, and the training goes on."""
        from .alerts import normalize
        from .errors import CommError
        title, text, name, seconds = normalize(title, text, level, wait_duration)
        if self._py_finished:
            raise UsageError("alert: this run is finished")
        try:
            self._alert(title, text, name, seconds)
        except CommError as e:
            if getattr(e, "code", None) != "unavailable":
                raise
            import warnings
            warnings.warn(str(e), RuntimeWarning, stacklevel=2)

    # -- artifacts (docs/python-api.md, "Artifacts") --------------------------------------------
    def use_artifact(self, artifact: str, type: Optional[str] = None) -> Any:
        """Records that this run (this writer) uses an artifact version and returns it (a
        ``cohort.ArtifactVersion``: ``download()``, ``get_path(name)``, ``files()``, ...).

        `artifact`: ``"name:alias"``, ``"name:v3"``, ``"name"`` (its ``latest``), or with
        ``"project/"`` or ``"entity/project/"`` in front (default: this run's). With `type`,
        a collection of another type is an error. An offline or disabled run reads the version
        from the server without recording the use (a warning says so)."""
        from . import api_artifacts
        from .api import _check_type

        entity, project, name, version = api_artifacts.parse_artifact_path(artifact)
        entity = entity or self.entity or None
        project = (project or self.project or self._init_args.get("project")
                   or self._settings.project)
        if not project:
            raise UsageError(f"use_artifact({artifact!r}): the run has no project: give "
                             "'project/name:alias'")
        t = self._artifact_transport()
        if entity is None:
            entity = t.get("/api/v1/viewer")["entity"]
        if type is not None:  # before the use is recorded
            _check_type(api_artifacts.read_version(t, entity, project, name, version), type)
        if self.disabled or self.offline:
            warnings.warn(f"cohort: run {self.id} is {'disabled' if self.disabled else 'offline'}"
                          f": its use of {artifact!r} is not recorded", RuntimeWarning,
                          stacklevel=2)
            v = api_artifacts.read_version(t, entity, project, name, version)
        else:
            v = api_artifacts.use_version(t, entity, project, name, version, self.id,
                                          self.label, self.project)
        _check_type(v, type)
        return v

    def _artifact_transport(self) -> Any:
        from .api_http import Transport, resolve

        t = getattr(self, "_artifacts_http", None)
        if t is None:
            url, key = resolve(self._settings.base_url, self._settings.api_key)
            t = self._artifacts_http = Transport(url, key)
        return t

    # -- logging artifacts (docs/python-api.md, "Logging artifacts") ------------------------------
    def log_artifact(self, artifact_or_path: Any, name: Optional[str] = None,
                     type: Optional[str] = None, aliases: Optional[List[str]] = None) -> Any:
        """Logs a version of an artifact (a ``cohort.Artifact``, or a file or directory path
        with ``name``/``type``) and returns the ``Artifact`` at once: hashing, staging and the
        upload happen in the background (``artifact.wait()`` blocks until it is committed;
        ``finish()`` waits within its timeout). ``latest`` moves by itself; ``aliases`` adds
        others."""
        from .artifacts import log_artifact
        if self._py_finished:
            raise UsageError("log_artifact: this run is finished")
        if self.disabled:
            raise UsageError("log_artifact: this run is disabled (mode='disabled')")
        artifact = log_artifact(self, artifact_or_path, name=name, type=type, aliases=aliases)
        self._artifacts.append(artifact)
        return artifact

    def _settle_artifacts(self) -> None:
        """Before the native finish: every logged artifact handed to the agent (its hashing
        threads joined), errors reported."""
        for a in self._artifacts:
            if a._thread is not None and a._thread.is_alive():
                sys.stderr.write(f"cohort: hashing artifact {a.name} before finishing...\n")
                a._join(None)
            if a._error is not None:
                warnings.warn(f"cohort: artifact {a.name} was not logged: {a._error}",
                              RuntimeWarning, stacklevel=4)

    def _note_artifact_outcomes(self) -> None:
        """After the native finish: what it saw of each version (committed ones mark their
        files as held by the server in the hash cache, so they are not copied again)."""
        for a in self._artifacts:
            if a._id is None or a._error is not None or a.version is not None:
                continue
            try:
                a._note_state(self._artifact_state(a._id))
            except Exception:  # noqa: BLE001 - best effort: only the cache misses it
                pass

    # -- a run the server did not confirm at init -----------------------------------------------
    def _note_unconfirmed(self) -> None:
        """init(): the agent's answer said the server has not confirmed the run (unreachable,
        or no answer within the wait): says so on stderr, and again at finish."""
        from .api_http import AuthError, resolve
        try:
            url = resolve(self._settings.base_url, self._settings.api_key or "-")[0]
        except Exception:  # noqa: BLE001 - an unreadable config file: the run's own URL
            url = self.url
        self._unconfirmed_url = url
        try:
            resolve(self._settings.base_url, self._settings.api_key)
        except AuthError:  # no key anywhere: the server will refuse what the agent sends
            sys.stderr.write(f"cohort: run {self.id}: no API key (none given, no COHORT_API_KEY, "
                             f"none saved by `cohort login`): the server at {url} will refuse "
                             f"this run; the agent keeps what it logs: run `cohort login` (or "
                             f"set COHORT_API_KEY), then `cohort sync` to upload it\n")
            return
        except Exception:  # noqa: BLE001 - an unreadable config file: said by the line below
            pass
        sys.stderr.write(f"cohort: run {self.id}: not confirmed by the server at {url} yet "
                         f"(unreachable, or slow to answer); what it logs is kept by the agent, "
                         f"which uploads it when the server answers (or run `cohort sync`)\n")

    def _note_unconfirmed_at_finish(self, error: Optional[str]) -> None:
        """finish(): when the run was not confirmed at init and finish did not complete (it
        could not hand everything to the agent); nothing when it completed (the agent keeps
        what the server has not received)."""
        url = self.__dict__.get("_unconfirmed_url")
        if url is None or not error:
            return
        sys.stderr.write(f"cohort: run {self.id}: finished before everything reached the agent "
                         f"(the server at {url} had not confirmed the run); see the warning "
                         f"below\n")

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
        if self.__dict__.get("_watches"):
            self.unwatch()
        self._settle_artifacts()
        self._flush_texts()
        from . import _histogram_worker
        if not _histogram_worker.drain(self, self._settings.finish_timeout or 30):
            warnings.warn(f"cohort: run {self.id}: histograms still being computed after "
                          "finish_timeout; the rest is not logged", RuntimeWarning, stacklevel=3)
        from .media import drain
        if not drain(self, self._settings.finish_timeout or 30):
            warnings.warn(f"cohort: run {self.id}: media still encoding after finish_timeout; "
                          "the rest is not logged", RuntimeWarning, stacklevel=3)
        http = getattr(self, "_artifacts_http", None)
        if http is not None:
            http.close()  # reopened if a version read through it is used later
        error = self._finish(exit_code, state)
        resume_file = self.__dict__.get("_resume_file")
        if exit_code == 0 and resume_file is not None and resume_file[1] == os.getpid():
            from . import _resume_file
            _resume_file.remove(resume_file[0], self.id)
        self._note_artifact_outcomes()
        self._note_unconfirmed_at_finish(error)
        if error:
            warnings.warn(f"cohort: run {self.id}: finish did not complete: {error}",
                          RuntimeWarning, stacklevel=3)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        code, state = _state.exit_state_for(exc)
        self._finish_with(code, state)
        return False

    # -- processes ---------------------------------------------------------------------------
    def __reduce__(self):
        """A Run sent to another process (multiprocessing, pickle) becomes, there, a writer of
        the same run labelled ``<this label>-<pid>``."""
        return (restore_run, (self._handoff_state(),))

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
            # The mode asked for ("dryrun" is offline too: the raw argument was compared), not
            # the run's state (an online run not confirmed yet is offline for now).
            "mode": "offline" if _normalize_mode(self._init_args.get("mode")) == "offline" or
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


def join_as_child(state: Dict[str, Any], label: str) -> Run:
    """Joins the run described by ``state`` (a pickled Run) as a worker writer ``label``."""
    s = Settings(**state.get("settings", {}))
    s.x_label = label
    s.x_primary = False
    s.x_update_finish_state = False
    ns = native_settings(s, mode=state.get("mode") or "", shared=True,
                         entity=state.get("entity") or None, project=state.get("project"),
                         run_id=state["id"], directory=state.get("dir"))
    run = Run(ns, settings=s, init_args={"id": state["id"], "project": state.get("project"),
                                         "entity": state.get("entity"),
                                         "name": state.get("name"), "dir": state.get("dir"),
                                         "shared": True})
    run._joined_from = state.get("label")
    if not run.disabled:
        _state.install_hooks()
    _state.register(run, make_current=False)
    return run


def restore_run(state: Dict[str, Any]) -> Run:
    """Unpickles a Run: in the process that made it, the run itself; elsewhere a writer of the
    same run (labelled ``<label>-<pid>``, not primary, never ending the run)."""
    pid = os.getpid()
    if state.get("parent_pid") == pid:
        for run in _state.live():
            if run.id == state["id"] and isinstance(run, Run) and run.label == state["label"]:
                return run
    label = f"{state['label']}-{pid}"
    key = (state["id"], label)
    existing = _state.unpickled(key)
    if isinstance(existing, Run):
        return existing
    if state.get("disabled"):
        restored = Run(local_id=state.get("id"), init_args={"name": state.get("name")})
    else:
        restored = join_as_child(state, label)
    _state.note_unpickled(key, restored)
    return restored


def live_runs() -> List[Run]:
    """Runs of this process that have not finished (for tests and tools)."""
    return [r for r in _state.live() if isinstance(r, Run)]
