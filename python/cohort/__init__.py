"""Cohort: experiment tracking for distributed training.

The API follows the SDK users come from, so ``import cohort as wandb`` runs their scripts::

    import cohort

    with cohort.init(project="mnist", group="DDP", config={"lr": 0.1}) as run:
        for step in range(100):
            run.log({"loss": 0.5, "acc": 0.9})

Shared mode (every rank writes into one run, each under its own label)::

    run = cohort.init(project="mnist", id=run_id, settings=cohort.Settings(
        mode="shared", x_label=f"rank_{rank}", x_primary=rank == 0,
        x_update_finish_state=rank == 0))

See docs/python.md.
"""
from __future__ import annotations

from typing import Optional

from . import errors
from ._native import native as _ext
from ._values import convert as _convert
from .errors import AuthenticationError, CommError, Error, UsageError

from .media import sink as _media_sink  # noqa: E402

_ext._set_hooks(_convert, dict(errors.ERROR_TYPES), Error, _media_sink)

from ._run import Run  # noqa: E402
from .artifacts import Artifact, ArtifactError  # noqa: E402
from ._synced import Config, Summary  # noqa: E402
from ._state import DetachedConfig as _DetachedConfig  # noqa: E402
from ._state import DetachedSummary as _DetachedSummary  # noqa: E402
from .sdk import (alert, define_metric, finish, init, log, log_artifact, login,  # noqa: E402
                  save, setup, teardown, unwatch, use_artifact, watch)
from .alerts import AlertLevel  # noqa: E402
from .histogram import Histogram  # noqa: E402
from .media import Audio, Html, Image, Table, Video  # noqa: E402
from .settings import Settings  # noqa: E402
from .api import Api, AuthError, NotFound  # noqa: E402  (read API: docs/python-api.md)
from .api_artifacts import ArtifactVersion  # noqa: E402  (what run.use_artifact returns)
from .artifact_download import VerificationError  # noqa: E402

#: The project version (CMakeLists.txt), compiled into the extension.
__version__: str = _ext.VERSION

#: The current run (set by init, None before init and after finish).
run: Optional[Run] = None
#: The current run's config (before init and after finish: empty, and writing it raises
#: cohort.UsageError).
config: Config = _DetachedConfig()
#: The current run's summary (before init and after finish: empty, and writing it raises
#: cohort.UsageError).
summary: Summary = _DetachedSummary()


def require(*args: object, **kwargs: object) -> None:
    """Accepted for compatibility (``wandb.require("service")``): Cohort always uses its node
    agent, the equivalent of the seed's service."""
    return None


__all__ = [
    "AlertLevel", "Api", "Artifact", "ArtifactError", "Histogram", "ArtifactVersion", "AuthError",
    "NotFound",
    "Audio", "Html", "Image", "Table", "Video",
    "VerificationError",
    "AuthenticationError", "CommError", "Config", "Error", "Run", "Settings", "Summary",
    "UsageError", "alert", "config", "define_metric", "finish", "init", "log", "log_artifact",
    "login", "require", "run", "save", "setup", "summary", "teardown", "unwatch", "use_artifact",
    "watch",
    "__version__",
]
