"""Module-level API: ``cohort.init``, ``cohort.log``, ``cohort.finish``, ``cohort.setup``.

These match the seed SDK's functions so that ``import cohort as wandb`` runs its scripts.
"""
from __future__ import annotations

import os
import random
import string
import warnings
from typing import Any, Dict, Optional, Sequence, Union

from . import _state
from ._native import native
from ._values import config_dict, to_json
from .errors import UsageError
from ._run import Run
from .settings import Settings, coerce_settings

# init() arguments of the seed SDK that have no meaning here; accepted and ignored.
_IGNORED_INIT_ARGS = frozenset({
    "allow_val_change", "anonymous", "config_exclude_keys", "config_include_keys", "force",
    "magic", "monitor_gym", "save_code", "sync_tensorboard", "tensorboard", "fork_from",
    "resume_from", "job_type_", "dir_", "reinit_",
})

_RESUME = {None: "", False: "", True: "allow", "auto": "allow", "allow": "allow",
           "must": "must", "never": "never"}


def _random_id() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(random.choice(alphabet) for _ in range(8))


def _effective_mode(mode: Optional[str], settings: Settings) -> tuple:
    """(client mode or "", shared) from init(mode=) and Settings(mode=)."""
    from .settings import _normalize_mode
    mode = _normalize_mode(mode)
    shared = mode == "shared" or settings.mode == "shared"
    chosen = ""
    for m in (mode, settings.mode):
        if m is not None and m != "shared":
            chosen = m
            break
    return chosen, shared


def _native_settings(settings: Settings, *, mode: str = "", shared: bool = False,
                     entity: Optional[str] = None, project: Optional[str] = None,
                     run_id: Optional[str] = None, name: Optional[str] = None,
                     group: Optional[str] = None, job_type: Optional[str] = None,
                     notes: Optional[str] = None, tags: Optional[Sequence[str]] = None,
                     config_json: str = "", resume: str = "",
                     directory: Optional[str] = None) -> Any:
    ns = native.Settings()
    ns.base_url = settings.base_url or ""
    ns.api_key = settings.api_key or ""
    ns.entity = entity or settings.entity or ""
    ns.project = project or settings.project or ""
    ns.run_id = run_id or settings.run_id or ""
    ns.name = name or settings.run_name or ""
    ns.group = group or settings.run_group or ""
    ns.job_type = job_type or settings.run_job_type or ""
    ns.notes = notes or settings.run_notes or ""
    ns.tags = [str(t) for t in (tags if tags is not None else settings.run_tags or [])]
    ns.config_json = config_json
    ns.resume = resume
    ns.mode = mode
    ns.dir = str(directory or settings.root_dir or "")
    ns.shared = shared
    ns.label = settings.x_label or ""
    if settings.x_primary is not None:
        ns.primary = settings.x_primary
    elif not shared:
        ns.primary = True  # a run of its own: its only writer is its primary
    if settings.x_update_finish_state is not None:
        ns.update_finish_state = settings.x_update_finish_state
    if settings.x_stats_gpu_device_ids is not None:
        ns.stats_gpu_device_ids = list(settings.x_stats_gpu_device_ids)
    if settings.x_disable_stats:
        ns.stats_sampling_interval_s = 0.0
    elif settings.x_stats_sampling_interval is not None:
        ns.stats_sampling_interval_s = settings.x_stats_sampling_interval
    if settings.console is not None and settings.console.lower() in ("off", "false", "none"):
        ns.capture_console = False
    if settings.init_timeout is not None:
        ns.init_timeout_s = settings.init_timeout
    if settings.finish_timeout is not None:
        ns.finish_timeout_s = settings.finish_timeout
    ns.transport = settings.x_agent or ""
    ns.handle_sigterm = False  # the package installs its own handler (_state.py)
    return ns


def init(entity: Optional[str] = None, project: Optional[str] = None,
         name: Optional[str] = None, group: Optional[str] = None,
         job_type: Optional[str] = None, config: Any = None,
         tags: Optional[Sequence[str]] = None, notes: Optional[str] = None,
         id: Optional[str] = None, resume: Union[bool, str, None] = None,
         mode: Optional[str] = None, dir: Optional[Union[str, os.PathLike]] = None,
         settings: Union[Settings, Dict[str, Any], None] = None,
         reinit: Union[bool, str, None] = None, **kwargs: Any) -> Run:
    """Starts a run (or joins one: ``id=`` in shared mode) and returns it.

    Arguments win over the environment (``COHORT_PROJECT``, ``COHORT_ENTITY``, ``COHORT_RUN_ID``,
    ``COHORT_MODE``, ``COHORT_DIR``), which wins over the config ``cohort login`` wrote. Returns
    within ``settings.init_timeout`` even when the server is down: the run then buffers locally
    and uploads when the server is back.

    A run still in progress in this process is finished first (``reinit="create_new"`` keeps
    it, ``reinit="return_previous"`` returns it). In a process that received a run from its
    parent (pickled, or inherited through fork), ``init()`` returns that run as this process's
    writer unless ``id``/``project``/``entity`` name another one.
    """
    unknown = set(kwargs) - _IGNORED_INIT_ARGS
    if unknown:
        raise TypeError(f"init() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    s = coerce_settings(settings)
    if resume not in _RESUME:
        raise UsageError(f"init: resume must be one of allow, must, never, auto, True or False; "
                         f"got {resume!r}")
    client_mode, shared = _effective_mode(mode, s)

    # A run received from the parent process: one passed explicitly (unpickled) is returned
    # unless the arguments name another run; one merely inherited through fork() (the parent's
    # cohort.run) only when nothing here describes a run of the child's own.
    describes_new = any(v is not None for v in (name, group, job_type, config, tags, notes))
    adopted = _state.adopted_run(explicit_only=describes_new)
    if adopted is not None and (id is None or id == adopted.id) and \
            (project is None or project == adopted.project) and \
            (entity is None or entity == adopted.entity):
        _state.install_hooks()
        _state.adopt(adopted)
        return adopted

    previous = _state.current()
    if previous is not None and not previous.finished and previous._pid == os.getpid():
        if reinit in ("return_previous", False):
            return previous
        if reinit != "create_new":
            previous.finish()

    cfg = config_dict(config)
    init_args = {"entity": entity, "project": project, "name": name, "group": group,
                 "job_type": job_type, "tags": list(tags) if tags is not None else None,
                 "notes": notes, "id": id, "mode": mode, "dir": str(dir) if dir else None}
    if isinstance(tags, str):
        tags = [tags]
    ns = _native_settings(s, mode=client_mode, shared=shared, entity=entity, project=project,
                          run_id=id, name=name, group=group, job_type=job_type, notes=notes,
                          tags=tags, config_json=to_json(cfg) if cfg else "",
                          resume=_RESUME[resume], directory=dir)
    run = Run(ns, settings=s, init_args=init_args, config=cfg, local_id=id or _random_id())
    if not run.disabled:
        _state.install_hooks()
    _state.register(run)
    return run


def join_as_child(state: Dict[str, Any], label: str) -> Run:
    """Joins the run described by ``state`` (a pickled Run) as a worker writer ``label``."""
    s = Settings(**state.get("settings", {}))
    s.x_label = label
    s.x_primary = False
    s.x_update_finish_state = False
    ns = _native_settings(s, mode=state.get("mode") or "", shared=True,
                          entity=state.get("entity") or None, project=state.get("project"),
                          run_id=state["id"], directory=state.get("dir"))
    run = Run(ns, settings=s, init_args={"id": state["id"], "project": state.get("project"),
                                         "entity": state.get("entity"),
                                         "name": state.get("name")})
    run._joined_from = state.get("label")
    if not run.disabled:
        _state.install_hooks()
    _state.register(run, make_current=False)
    return run


def log(data: Dict[str, Any], step: Optional[int] = None, commit: Optional[bool] = None,
        sync: Optional[bool] = None) -> None:
    """Logs to the current run (``cohort.run``); see :meth:`cohort.Run.log`."""
    run = _state.current()
    if run is None:
        run = _state.adopted_run()
        if run is None:
            raise UsageError("cohort.log: no run; call cohort.init() first")
    run.log(data, step, commit)


def finish(exit_code: Optional[int] = None, quiet: Optional[bool] = None) -> None:
    """Finishes the current run (``cohort.run``), if any."""
    run = _state.current()
    if run is not None:
        run.finish(exit_code)


def teardown(exit_code: Optional[int] = None) -> None:
    """Finishes every run of this process that is still going."""
    _state.finish_all(0 if exit_code is None else int(exit_code))


def setup(settings: Union[Settings, Dict[str, Any], None] = None) -> None:
    """Starts the node agent now (if it is not running), so that runs started later by this
    process or by its children (a ``multiprocessing.Pool``) connect to it at once.

    Call it in the parent before starting child processes. Never raises for an agent that
    cannot start: runs then use the in-process sender.
    """
    s = coerce_settings(settings)
    client_mode, _ = _effective_mode(None, s)
    ns = _native_settings(s, mode=client_mode)
    try:
        native.setup(ns)
    except Exception as e:  # noqa: BLE001 - setup is an optimisation, never fatal
        warnings.warn(f"cohort.setup: {e}", RuntimeWarning, stacklevel=2)


def login(key: Optional[str] = None, host: Optional[str] = None, relogin: Optional[bool] = None,
          **kwargs: Any) -> bool:
    """Uses ``key``/``host`` for the runs of this process (and its children) by setting
    ``COHORT_API_KEY``/``COHORT_BASE_URL``; without them, the saved config is used. Use the
    ``cohort login`` command to save them."""
    if key:
        os.environ["COHORT_API_KEY"] = key
    if host:
        os.environ["COHORT_BASE_URL"] = host
    return True
