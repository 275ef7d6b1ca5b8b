"""The client library's settings (``native.Settings``) from the package's ``Settings`` and
``init()`` arguments. Used by ``sdk`` (init, setup) and ``_run`` (a run restored in another
process)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ._native import native
from .settings import Settings, _normalize_mode


def effective_mode(mode: Optional[str], settings: Settings) -> tuple:
    """(client mode or "", shared) from init(mode=) and Settings(mode=)."""
    mode = _normalize_mode(mode)
    shared = mode == "shared" or settings.mode == "shared"
    chosen = ""
    for m in (mode, settings.mode):
        if m is not None and m != "shared":
            chosen = m
            break
    return chosen, shared


def native_settings(settings: Settings, *, mode: str = "", shared: bool = False,
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
