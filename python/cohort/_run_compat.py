"""The parts of ``cohort.Run`` that scripts written for the vendor's SDK use besides logging:
``run.dir``, ``run.resumed``, ``run.starting_step``, ``run.url`` / ``run.get_url()``,
``run.save`` (uploads nothing: it says so), ``run.log_code`` (a warned no-op) and
``run.mark_preempting`` (a no-op). ``cohort.Run`` inherits them (``RunCompat`` comes before the
extension's handle in its bases).
"""
from __future__ import annotations

import glob as globmod
import os
import sys
import tempfile
import urllib.parse
import warnings
from typing import Any, Dict, List, Optional, Union

from . import _resume_file

#: Under the run's data directory: ``%files/<project>/<run id>/files`` (``%``: no run directory of
#: the agent is named so; four levels down: ``cohort sync`` never takes a user's ``meta.json``
#: there for a writer's).
FILES_DIR = "%files"

_POLICIES = ("live", "end", "now")


def _user_stacklevel() -> int:
    """The stacklevel of a warning that names the user's call (past this package's frames)."""
    here = os.path.dirname(__file__)
    level, frame = 1, sys._getframe(1)
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1
    return level


def _files_named(paths: List[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return f"{len(paths)} file{'s' if len(paths) != 1 else ''} ({shown}{more})"


class RunCompat:
    """Mixed into ``cohort.Run`` (``_run.py``), which sets ``_settings``, ``_init_args``,
    ``_starting_step`` and ``_resumed``."""

    _settings: Any
    _init_args: Dict[str, Any]

    # -- where the run is ------------------------------------------------------------------------
    @property
    def starting_step(self) -> int:
        """The step this writer started at: 0 for a new run, one past the run's last step for a
        resumed one (``run.step`` right after ``init``)."""
        return int(self.__dict__.get("_starting_step", 0))

    @property
    def resumed(self) -> bool:
        """True when the run existed before this ``init`` (it was resumed, or joined by id), as
        far as the server's answer to the writer's join tells: the run had steps, a summary, or
        config keys, a group, job type, notes or tags that this ``init`` did not give (with
        ``resume="must"``: always). A run that had none of these, or whose join the server did
        not answer within ``init_timeout`` (offline), is False. In shared mode: True when this
        writer itself goes on from earlier steps (a rank that re-joined)."""
        return bool(self.__dict__.get("_resumed", False))

    def _was_resumed(self, held_config: Dict[str, Any], held_summary: Dict[str, Any],
                     init_config: Dict[str, Any], filled_from_server: bool) -> bool:
        """``resumed`` from what the writer's join answered (``Run.__init__``)."""
        if self.disabled or not self._run_fields:  # type: ignore[attr-defined]
            return False
        if self._init_args.get("shared"):
            return self.starting_step > 0
        if self._init_args.get("resume") == "must":
            return True
        return (self.starting_step > 0 or bool(held_summary) or filled_from_server or
                bool(set(held_config) - set(init_config)))

    @property
    def dir(self) -> str:
        """The run's local files directory (made on first use):
        ``<data directory>/%files/<project>/<run id>/files``, the data directory being
        ``init(dir=)``, ``Settings(root_dir=)``, ``COHORT_DIR``, else the agent's default; a
        private temporary directory for a disabled run. Cohort uploads nothing from it: log a
        file kept there with ``run.log_artifact(path, type=...)``."""
        path = self.__dict__.get("_files_dir")
        if path is not None:
            return path
        if self.disabled:  # type: ignore[attr-defined]
            path = tempfile.mkdtemp(prefix=f"cohort-run-{self.id}-")  # type: ignore[attr-defined]
        else:
            base = _resume_file.data_dir(self._init_args.get("dir"), self._settings)
            path = os.path.join(base, FILES_DIR,
                                self.project or _resume_file.DEFAULT_PROJECT,  # type: ignore
                                self.id, "files")  # type: ignore[attr-defined]
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as e:
                raise OSError(e.errno, f"cohort: run.dir: cannot create {path}: "
                                       f"{e.strerror or e}; give init(dir=...) a writable "
                                       f"directory") from e
        self._files_dir = path
        return path

    # -- the web UI ------------------------------------------------------------------------------
    def get_url(self) -> Optional[str]:
        """The run's page in the web UI (``<server>/?p=<entity>%2F<project>&run=<id>``, as the
        UI and the alert webhooks link it); None for a disabled run, or one whose entity is not
        known (the server did not confirm it at ``init``: offline)."""
        if self.disabled or not self.entity:  # type: ignore[attr-defined]
            return None
        quote = urllib.parse.quote
        return (f"{self._ui_base()}/?p={quote(self.entity, safe='')}%2F"  # type: ignore
                f"{quote(self.project, safe='')}&run={quote(self.id, safe='')}")  # type: ignore

    @property
    def url(self) -> str:
        """``get_url()``, or "" where it is None (a disabled run, an offline one)."""
        return self.get_url() or ""

    def _ui_base(self) -> str:
        """The server's address the run uses (the client library's resolved ``base_url``)."""
        native_url = super().url  # type: ignore[misc]  # <base>/<entity|->/<project>/runs/<id>
        suffix = (f"/{self.entity or '-'}/{self.project}/runs/"  # type: ignore[attr-defined]
                  f"{super().id}")  # type: ignore[misc]
        if native_url.endswith(suffix):
            return native_url[:-len(suffix)].rstrip("/")
        from .api_http import resolve
        return resolve(self._settings.base_url, self._settings.api_key or "-")[0].rstrip("/")

    # -- the vendor's calls that have no Cohort counterpart --------------------------------------
    def mark_preempting(self) -> None:
        """Accepted for compatibility; does nothing (a run killed by SIGTERM ends as killed,
        exit code 143; resume it with ``init(id=..., resume="allow")``)."""
        return None

    def log_code(self, root: Optional[str] = ".", name: Optional[str] = None,
                 include_fn: Any = None, exclude_fn: Any = None) -> None:
        """Does nothing and returns None: Cohort saves no code. A RuntimeWarning (once a run)
        says so and how to keep it: ``run.log_artifact(directory, type="code")``."""
        if not self.__dict__.get("_log_code_warned"):
            self._log_code_warned = True
            warnings.warn(f"cohort: run.log_code({root!r}) does nothing: Cohort does not save "
                          f"code; log it as an artifact instead: run.log_artifact({root!r}, "
                          f"name='source', type='code')", RuntimeWarning,
                          stacklevel=_user_stacklevel())
        return None

    def save(self, glob_str: Union[str, bytes, "os.PathLike[str]"],
             base_path: Optional[Union[str, "os.PathLike[str]"]] = None,
             policy: str = "live", glob: bool = True) -> List[str]:
        """Uploads nothing and returns []: Cohort keeps no run files. A RuntimeWarning (once per
        run and pattern) names the files ``glob_str`` matches now, which were NOT uploaded, and
        says to log them with ``run.log_artifact(path, type=...)`` (versioned, downloadable with
        ``use_artifact``). ``policy`` must be ``"live"``, ``"end"`` or ``"now"`` (ValueError,
        as the vendor's)."""
        if policy not in _POLICIES:
            raise ValueError(f'run.save: policy must be "live", "end" or "now", got {policy!r}')
        if isinstance(glob_str, bytes):
            glob_str = glob_str.decode("utf-8")
        pattern = os.fspath(glob_str)
        if self.disabled:  # type: ignore[attr-defined]
            return []
        warned = self.__dict__.setdefault("_save_warned", set())
        if pattern in warned:
            return []
        if len(warned) < 1000:
            warned.add(pattern)
        if pattern.startswith(("gs://", "s3://")):
            files: List[str] = []
        elif glob:
            files = sorted(p for p in globmod.glob(pattern, recursive=True) if os.path.isfile(p))
        else:
            files = [pattern] if os.path.isfile(pattern) else []
        what = (_files_named(files) if files else "anything (no file matches it now)")
        if len(files) == 1:
            example = files[0]
        elif files:  # several: their directory (an artifact of a directory takes its files)
            example = os.path.dirname(files[0]) or "."
        else:
            example = pattern
        warnings.warn(f"cohort: run.save({pattern!r}) did NOT upload {what}: Cohort keeps no run "
                      f"files and run.save uploads nothing; log them as an artifact instead, "
                      f"e.g. run.log_artifact({example!r}, type='model')", RuntimeWarning,
                      stacklevel=_user_stacklevel())
        return []
