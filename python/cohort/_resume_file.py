"""The resume file of ``init(resume="auto")`` (or ``resume=True``) without an id, as the
vendor SDK's ``wandb-resume.json``: init writes the run's id to ``cohort-resume.json`` in the
run's data directory (``init(dir=)``, ``Settings(root_dir=)``, ``COHORT_DIR``, else the client
library's default), a run finishing with exit code 0 removes it, so the next
``init(resume="auto")`` without an id resumes only a run that crashed or was killed: not one
whose process still runs (the file names its pid and host), which another script or a sweep's
next trial started meanwhile would otherwise join.

Shared runs neither read nor write it (their ranks share one directory and one run id that
the launcher gives). A process under torchrun (``RANK``) or with ``Settings(x_label=)`` has a
file of its own (``cohort-resume-<label>.json``), so that the ranks of a job whose processes
each have a run of their own resume each their own. A file that cannot be read or holds no
run id is a warning and a new run, never an error.
"""
from __future__ import annotations

import json
import os
import re
import socket
import warnings
from typing import Optional

from .settings import Settings

FILE_NAME = "cohort-resume.json"
DEFAULT_PROJECT = "uncategorized"  # the client library's (src/client/config.h)


def _env(name: str) -> str:
    return os.environ.get(name) or ""


def data_dir(directory: Optional[str], settings: Settings) -> str:
    """The run's data directory as the client library picks it: ``init(dir=)``,
    ``Settings(root_dir=)``, ``COHORT_DIR``, ``$XDG_DATA_HOME/cohort/agent``, else
    ``$HOME/.local/share/cohort/agent``."""
    chosen = str(directory or settings.root_dir or "") or _env("COHORT_DIR")
    if chosen:
        return chosen
    if _env("XDG_DATA_HOME"):
        return os.path.join(_env("XDG_DATA_HOME"), "cohort", "agent")
    return os.path.join(_env("HOME") or "/tmp", ".local", "share", "cohort", "agent")


def path_for(directory: Optional[str], settings: Settings) -> str:
    """The resume file of this process: keyed by its writer label when it has one given
    (``x_label``) or one from torchrun (``rank_<RANK>``)."""
    label = settings.x_label or (f"rank_{_env('RANK')}" if _env("RANK") else "")
    name = FILE_NAME
    if label:
        name = "cohort-resume-" + re.sub(r"[^A-Za-z0-9._-]", "_", label) + ".json"
    return os.path.join(data_dir(directory, settings), name)


def explicit_run_id(run_id: Optional[str], settings: Settings) -> str:
    """The id init was given (argument, Settings, COHORT_RUN_ID or WANDB_RUN_ID), or ""."""
    return run_id or settings.run_id or _env("COHORT_RUN_ID") or _env("WANDB_RUN_ID")


def expected_project(project: Optional[str], settings: Settings) -> str:
    """The project the client library will pick (argument, Settings, COHORT_PROJECT,
    WANDB_PROJECT, its default)."""
    return (project or settings.project or _env("COHORT_PROJECT") or _env("WANDB_PROJECT")
            or DEFAULT_PROJECT)


def read(path: str) -> Optional[dict]:
    """{"run_id", "project"} of the resume file, or None when there is none; a file that cannot
    be read or holds no valid run id is a RuntimeWarning (at init's caller) and None."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        warnings.warn(f"cohort: resume file {path} cannot be read ({e}); starting a new run",
                      RuntimeWarning, stacklevel=4)
        return None
    run_id = data.get("run_id") if isinstance(data, dict) else None
    if not isinstance(run_id, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", run_id):
        warnings.warn(f"cohort: resume file {path} holds no valid run id; starting a new run",
                      RuntimeWarning, stacklevel=4)
        return None
    if _writer_alive(data):
        return None  # that run is not crashed: its process still runs (another script, a sweep)
    project = data.get("project")
    return {"run_id": run_id, "project": project if isinstance(project, str) else ""}


def _writer_alive(data: dict) -> bool:
    """Whether the process that wrote the file (its pid and host, when the file has them) runs
    on this host now, and is not this one."""
    pid, host = data.get("pid"), data.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or pid == os.getpid():
        return False
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: a process of another user has the pid: alive
        return True
    return True


def write(path: str, run_id: str, project: str) -> None:
    """Writes the resume file atomically (a temporary file renamed over it); a failure is a
    RuntimeWarning (the run goes on, it is just not resumed by the next init)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"run_id": run_id, "project": project, "pid": os.getpid(),
                       "host": socket.gethostname()}, f)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        warnings.warn(f"cohort: resume file {path} not written ({e}): a crash of run {run_id} "
                      f"will not be resumed by init(resume='auto')", RuntimeWarning, stacklevel=3)


def remove(path: str, run_id: str) -> None:
    """Removes the resume file when it still names ``run_id`` (a later run of the directory
    may have written its own); never raises."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, dict) and data.get("run_id") == run_id:
            os.unlink(path)
    except (OSError, ValueError):
        pass
