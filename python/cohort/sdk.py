"""Module-level API: ``cohort.init``, ``cohort.log``, ``cohort.finish``, ``cohort.setup``.

These match the seed SDK's functions so that ``import cohort as wandb`` runs its scripts.
"""
from __future__ import annotations

import os
import random
import string
import sys
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _resume_file, _state
from ._client_settings import effective_mode, native_settings
from ._native import native
from ._run import Run
from ._values import config_dict, to_json
from .errors import UsageError
from .settings import Settings, coerce_settings

# init() arguments of the seed SDK that have no meaning here; accepted and ignored.
_IGNORED_INIT_ARGS = frozenset({
    "allow_val_change", "anonymous", "force",
    "magic", "monitor_gym", "save_code", "sync_tensorboard", "tensorboard", "fork_from",
    "resume_from", "job_type_", "dir_", "reinit_",
})

# init(reinit=...): what to do with the runs of this process still going (the vendor SDK's).
_REINIT = {True: "finish_previous", False: "return_previous", "finish_previous":
           "finish_previous", "return_previous": "return_previous", "create_new": "create_new"}

_RESUME = {None: "", False: "", True: "allow", "auto": "allow", "allow": "allow",
           "must": "must", "never": "never"}

# The seed SDK's environment variables for init()'s arguments that have no Cohort variable
# (the client library reads WANDB_MODE, WANDB_PROJECT, WANDB_RUN_ID itself, after COHORT_*).
_VENDOR_ENV = {"name": "WANDB_NAME", "group": "WANDB_RUN_GROUP", "job_type": "WANDB_JOB_TYPE",
               "notes": "WANDB_NOTES", "tags": "WANDB_TAGS"}


def _from_vendor_env(arg: str, settings_value: Any) -> Any:
    """init()'s ``arg`` from the seed SDK's variable, when neither the argument (checked by the
    caller) nor the Settings field gives it; None when the variable is unset or empty."""
    if settings_value is not None:
        return None
    value = os.environ.get(_VENDOR_ENV[arg], "")
    if arg == "tags":
        tags = [t.strip() for t in value.split(",") if t.strip()]
        return tags or None
    return value or None


def _random_id() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(random.choice(alphabet) for _ in range(8))


def init(entity: Optional[str] = None, project: Optional[str] = None,
         name: Optional[str] = None, group: Optional[str] = None,
         job_type: Optional[str] = None, config: Any = None,
         tags: Optional[Sequence[str]] = None, notes: Optional[str] = None,
         id: Optional[str] = None, resume: Union[bool, str, None] = None,
         mode: Optional[str] = None, dir: Optional[Union[str, os.PathLike]] = None,
         settings: Union[Settings, Dict[str, Any], None] = None,
         reinit: Union[bool, str, None] = None,
         config_exclude_keys: Optional[Sequence[str]] = None,
         config_include_keys: Optional[Sequence[str]] = None, **kwargs: Any) -> Run:
    """Starts a run (or joins one: ``id=`` in shared mode) and returns it.

    Arguments win over the environment (``COHORT_PROJECT``, ``COHORT_ENTITY``, ``COHORT_RUN_ID``,
    ``COHORT_MODE``, ``COHORT_DIR``), which wins over the config ``cohort login`` wrote; name,
    group, job_type, tags and notes fall back on the seed SDK's ``WANDB_NAME``,
    ``WANDB_RUN_GROUP``, ``WANDB_JOB_TYPE``, ``WANDB_TAGS`` (comma-separated), ``WANDB_NOTES``.
    Returns within ``settings.init_timeout`` even when the server is down: the run then buffers
    locally and uploads when the server is back (a line on stderr says so, at init and finish).

    ``resume="auto"`` (or True) without an id resumes the last run of the data directory that
    did not finish with exit code 0 (its ``cohort-resume.json``; not in shared mode).

    ``config``: a dict (an argparse.Namespace, any object with ``__dict__``) or the path of a
    YAML or JSON file; ``config_include_keys`` / ``config_exclude_keys`` keep only / leave out
    those of its top-level keys (not both).

    ``reinit``, when a run of this process is still going (the vendor SDK's rules): by default
    (None, ``"default"``) the most recent one is returned, with a warning, outside notebooks,
    and every one is finished first in a notebook (IPython); ``True`` / ``"finish_previous"``
    finish them all first; ``False`` / ``"return_previous"`` return the most recent one;
    ``"create_new"`` starts another run beside them, which becomes ``cohort.run`` only when
    there is no current run. In a process that received a run from its parent (pickled, or
    inherited through fork), ``init()`` returns that run as this process's writer unless
    ``id``/``project``/``entity`` name another one.
    """
    unknown = set(kwargs) - _IGNORED_INIT_ARGS
    if unknown:
        raise TypeError(f"init() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    for arg, value in (("entity", entity), ("project", project), ("name", name),
                       ("group", group), ("job_type", job_type), ("notes", notes), ("id", id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"init: {arg} must be a str, got {type(value).__name__} "
                            f"({value!r:.60})")
    if isinstance(tags, str):
        tags = [tags]  # one tag, not its characters
    elif tags is not None:
        try:
            tags = list(tags)
        except TypeError:
            raise TypeError(f"init: tags must be a list of str, got {type(tags).__name__}") \
                from None
        bad = [t for t in tags if not isinstance(t, str)]
        if bad:
            raise TypeError(f"init: tags must be str, got {type(bad[0]).__name__} "
                            f"({bad[0]!r:.60})")
    s = coerce_settings(settings)
    if resume not in _RESUME:
        raise UsageError(f"init: resume must be one of allow, must, never, auto, True or False; "
                         f"got {resume!r}")
    if reinit is None:
        reinit = s.reinit  # Settings(reinit=...), as the vendor's SDK takes it too
    policy = _reinit_policy(reinit)
    cfg = _init_config(config, config_exclude_keys, config_include_keys)
    client_mode, shared = effective_mode(mode, s)

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

    active = _active_runs()
    if active:
        if policy == "finish_previous":
            for previous in reversed(active):
                previous.finish()
        elif policy == "return_previous":
            previous = active[-1]
            if resume == "must":
                raise UsageError(f"init(resume='must'): run {previous.id} is still going in this "
                                 f"process; finish it first (run.finish()), or pass "
                                 f"reinit='create_new' to run both")
            if reinit in (None, "default"):
                warnings.warn(f"cohort.init: run {previous.id} is still going in this process: "
                              f"returning it (reinit's default outside notebooks, as the vendor "
                              f"SDK's); for a new run call run.finish() first or pass "
                              f"reinit='finish_previous' (reinit='create_new' keeps both going)",
                              UserWarning, stacklevel=2)
            return previous

    # The seed SDK's environment, for what neither the arguments nor the settings give (not
    # before the checks above: a variable inherited by a child process describes no run).
    name = name if name is not None else _from_vendor_env("name", s.run_name)
    group = group if group is not None else _from_vendor_env("group", s.run_group)
    job_type = job_type if job_type is not None else _from_vendor_env("job_type",
                                                                      s.run_job_type)
    notes = notes if notes is not None else _from_vendor_env("notes", s.run_notes)
    tags = tags if tags is not None else _from_vendor_env("tags", s.run_tags)

    resume_file = None
    # Shared runs have no resume file (COHORT_MODE=shared, which the client library reads, too).
    env_mode = os.environ.get("COHORT_MODE") or os.environ.get("WANDB_MODE")
    shared_by_env = not client_mode and env_mode == "shared"
    if resume in (True, "auto") and not (shared or shared_by_env):
        resume_file, id = _auto_resume(id, project, dir, s)
    init_args = {"entity": entity, "project": project, "name": name, "group": group,
                 "job_type": job_type, "tags": list(tags) if tags is not None else None,
                 "notes": notes, "id": id, "mode": mode, "dir": str(dir) if dir else None,
                 "resume": _RESUME[resume], "shared": bool(shared or shared_by_env)}
    ns = native_settings(s, mode=client_mode, shared=shared, entity=entity, project=project,
                          run_id=id, name=name, group=group, job_type=job_type, notes=notes,
                          tags=tags, config_json=to_json(cfg) if cfg else "",
                          resume=_RESUME[resume], directory=dir)
    run = Run(ns, settings=s, init_args=init_args, config=cfg, local_id=id or _random_id())
    if not run.disabled:
        if resume_file is not None:
            _resume_file.write(resume_file, run.id, run.project)
            run._resume_file = (resume_file, os.getpid())
        _state.install_hooks()
        if run.offline and not _offline_by_choice(client_mode):
            run._note_unconfirmed()
        elif resume is None and not (shared or shared_by_env) and run.starting_step > 0:
            # A fixed id run again without resume= continues the run (as resume="allow" does):
            # said once, since a script that logs explicit steps from 0 would see them dropped.
            sys.stderr.write(f"cohort: run {run.id} exists: continuing it at step "
                             f"{run.starting_step} (explicit steps below it are dropped); pass "
                             f"resume='never' to refuse, or another id for a new run\n")
    current = _state.current()
    _state.register(run, make_current=policy != "create_new" or current is None or
                    current.finished or current._pid != os.getpid())
    return run


def _reinit_policy(reinit: Any) -> str:
    """``init(reinit=...)`` as "finish_previous", "return_previous" or "create_new"."""
    if reinit is None or (isinstance(reinit, str) and reinit == "default"):
        return "finish_previous" if _in_notebook() else "return_previous"
    try:
        policy = _REINIT.get(reinit)
    except TypeError:  # unhashable
        policy = None
    if policy is None:
        raise UsageError(f"init: reinit must be one of 'default', 'return_previous', "
                         f"'finish_previous', 'create_new', True or False; got {reinit!r:.60}")
    return policy


def _in_notebook() -> bool:
    """Whether this is an interactive IPython shell (Jupyter, Colab, the IPython terminal), as
    the vendor SDK's ``in_notebook`` tells it (IPython is not imported here)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        return ipython.get_ipython() is not None
    except Exception:  # noqa: BLE001 - a broken IPython is no notebook
        return False


def _active_runs() -> list:
    """The runs this process started that are still going, oldest first (not a writer joined
    from a pickled run, nor a run inherited through fork)."""
    pid = os.getpid()
    return [r for r in _state.live() if isinstance(r, Run) and not r.finished and
            r._pid == pid and r._joined_from is None]


def _init_config(config: Any, exclude: Optional[Sequence[str]],
                 include: Optional[Sequence[str]]) -> Dict[str, Any]:
    """init's ``config`` (a file read) with ``config_include_keys`` / ``config_exclude_keys``
    applied to its top-level keys, as the vendor SDK's ``parse_config``."""
    if exclude and include:
        raise UsageError("init: give config_exclude_keys or config_include_keys, not both")
    cfg = config_dict(config)
    for arg, keys in (("config_include_keys", include), ("config_exclude_keys", exclude)):
        if not keys:
            continue
        if isinstance(keys, str):
            keys = [keys]  # one key, not its characters
        try:
            wanted = {str(k) for k in keys}
        except TypeError:
            raise TypeError(f"init: {arg} must be a list of str, got "
                            f"{type(keys).__name__}") from None
        keep = arg == "config_include_keys"
        cfg = {k: v for k, v in cfg.items() if (k in wanted) == keep}
    return cfg


def _auto_resume(run_id: Optional[str], project: Optional[str],
                 directory: Optional[Union[str, os.PathLike]],
                 s: Settings) -> Tuple[str, Optional[str]]:
    """init(resume="auto"/True) of a run of its own: (its resume file, the run id to use). Without
    an id given, the id of the resume file of the directory (a run that did not finish with exit
    code 0) when it names a run of the same project."""
    path = _resume_file.path_for(str(directory) if directory else None, s)
    found = _resume_file.read(path)
    if found is None:
        return path, run_id
    given = _resume_file.explicit_run_id(run_id, s)
    if given:
        if given != found["run_id"]:
            warnings.warn(f"cohort: resume file {path} names run {found['run_id']}, but init was "
                          f"given id {given}: using {given}", RuntimeWarning, stacklevel=3)
        return path, run_id
    want = _resume_file.expected_project(project, s)
    if found["project"] and found["project"] != want:
        warnings.warn(f"cohort: resume file {path} names run {found['run_id']} of project "
                      f"{found['project']!r}, not of project {want!r}: starting a new run",
                      RuntimeWarning, stacklevel=3)
        return path, run_id
    return path, found["run_id"]


def _offline_by_choice(client_mode: str) -> bool:
    """Whether the run is offline because its mode says so (the argument or Settings, else
    COHORT_MODE, else WANDB_MODE, as the client library picks it)."""
    mode = client_mode or os.environ.get("COHORT_MODE") or os.environ.get("WANDB_MODE") or ""
    return mode in ("offline", "dryrun")


def log(data: Dict[str, Any], step: Optional[int] = None, commit: Optional[bool] = None,
        sync: Optional[bool] = None) -> None:
    """Logs to the current run (``cohort.run``); see :meth:`cohort.Run.log`."""
    run = _state.current()
    if run is None:
        run = _state.adopted_run()
        if run is None:
            raise UsageError("cohort.log: no run; call cohort.init() first")
    run.log(data, step, commit)


def define_metric(name: str, step_metric: Any = None, step_sync: Optional[bool] = None,
                  hidden: Optional[bool] = None, summary: Optional[str] = None,
                  goal: Optional[str] = None, overwrite: Optional[bool] = None,
                  **kwargs: Any) -> None:
    """``run.define_metric`` of the current run (``cohort.run``): accepted for compatibility
    (Cohort keeps steps per writer and every series raw)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"cohort.define_metric: name must be a non-empty str, got {name!r:.60}")
    run = _state.current() or _state.adopted_run()
    if run is None:
        raise UsageError("cohort.define_metric: no run; call cohort.init() first")
    run.define_metric(name, step_metric=step_metric, step_sync=step_sync, hidden=hidden,
                      summary=summary, goal=goal, overwrite=overwrite, **kwargs)


def watch(models: Any, criterion: Any = None, log: Optional[str] = "gradients",
          log_freq: int = 1000, idx: Optional[int] = None, log_graph: bool = False) -> None:
    """``run.watch`` of the current run (``cohort.run``)."""
    run = _state.current() or _state.adopted_run()
    if run is None:
        raise UsageError("cohort.watch: no run; call cohort.init() first")
    run.watch(models, criterion, log=log, log_freq=log_freq, idx=idx, log_graph=log_graph)


def unwatch(models: Any = None) -> None:
    """``run.unwatch`` of the current run, if any."""
    run = _state.current() or _state.adopted_run()
    if run is not None:
        run.unwatch(models)


def use_artifact(artifact: str, type: Optional[str] = None) -> Any:
    """``run.use_artifact`` of the current run (``cohort.run``)."""
    run = _state.current() or _state.adopted_run()
    if run is None:
        raise UsageError("cohort.use_artifact: no run; call cohort.init() first (or read it "
                         "with cohort.Api().artifact(...))")
    return run.use_artifact(artifact, type=type)


def log_artifact(artifact_or_path: Any, name: Optional[str] = None, type: Optional[str] = None,
                 aliases: Optional[List[str]] = None) -> Any:
    """``run.log_artifact`` of the current run (``cohort.run``)."""
    run = _state.current() or _state.adopted_run()
    if run is None:
        raise UsageError("cohort.log_artifact: no run; call cohort.init() first")
    return run.log_artifact(artifact_or_path, name=name, type=type, aliases=aliases)


def save(glob_str: Any, base_path: Any = None, policy: str = "live", glob: bool = True
         ) -> List[str]:
    """``run.save`` of the current run (``cohort.run``): uploads nothing (Cohort keeps no run
    files), warns naming the files, returns []; see :meth:`cohort.Run.save`."""
    run = _state.current() or _state.adopted_run()
    if run is None:
        raise UsageError("cohort.save: no run; call cohort.init() first (and log files with "
                         "run.log_artifact(path, type=...): Cohort keeps no run files)")
    return run.save(glob_str, base_path=base_path, policy=policy, glob=glob)


def alert(title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
    """``run.alert`` of the current run (``cohort.run``); see :meth:`cohort.Run.alert`."""
    run = _state.current() or _state.adopted_run()
    if run is None:
        raise UsageError("cohort.alert: no run; call cohort.init() first")
    run.alert(title, text, level=level, wait_duration=wait_duration)


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
    cannot start: runs then start a private agent each.
    """
    s = coerce_settings(settings)
    client_mode, _ = effective_mode(None, s)
    ns = native_settings(s, mode=client_mode)
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
