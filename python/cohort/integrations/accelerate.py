"""``CohortTracker``: Cohort as a Hugging Face Accelerate tracker.

::

    from accelerate import Accelerator
    from cohort.integrations.accelerate import CohortTracker

    accelerator = Accelerator(log_with=[CohortTracker(project="mnist", name="baseline")])
    accelerator.init_trackers("mnist", config={"lr": 1e-3})   # the config: the run's config
    ...
    accelerator.log({"loss": loss.item()}, step=step)         # at the run's step `step`
    accelerator.end_training()                                # finishes the run

Like accelerate's own trackers it acts on the main process only (``main_process_only``): the
run starts there, on first use (``init_trackers``, ``log`` or ``tracker``), so building the
tracker before the ``Accelerator`` touches no process group. ``mode="shared"`` logs from every
process into one shared run (``rank_<process index>``, the main process its primary). Keep the
tracker object then and call its ``log(...)`` and ``finish()`` on every process:
``Accelerator.log`` and ``end_training`` run on the main process only, and
``accelerator.get_tracker("cohort")`` off the main process returns accelerate's blank tracker,
whose ``log`` does nothing::

    tracker = CohortTracker(project="mnist", mode="shared")
    accelerator = Accelerator(log_with=[tracker])
    ...
    tracker.log({"loss": loss.item()}, step=step)             # on every process
    tracker.finish()                                           # on every process

The processes agree on the shared run's id without a collective (the process group's
key-value store), so a process may start its run at its first ``log``, after ``prepare`` and
``backward``.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from accelerate.state import PartialState
from accelerate.tracking import GeneralTracker, on_main_process

from ._common import Loggable, check_mode, start_run


class CohortTracker(GeneralTracker):
    """An accelerate tracker logging to Cohort (see the module docstring).

    Args:
        project, name, group, entity, tags, notes, job_type, config: for ``cohort.init``
            (project: default ``COHORT_PROJECT``, else the client's default).
        run: an already started ``cohort.Run`` to log to.
        mode: None (the main process logs) or ``"shared"`` (every process, one shared run).
        settings: a ``cohort.Settings`` (or dict) for the run started here.
        **kwargs: more ``cohort.init`` arguments.
    """

    name = "cohort"
    requires_logging_directory = False

    def __init__(self, project: Optional[str] = None, name: Optional[str] = None, *,
                 run: Any = None, mode: Optional[str] = None, settings: Any = None,
                 **kwargs: Any) -> None:
        super().__init__()
        self._mode = check_mode(mode)
        # accelerate's on_main_process reads this per call
        self.main_process_only = self._mode != "shared"
        self.run_name = name
        self._init: Dict[str, Any] = dict(kwargs)
        self._init.update({k: v for k, v in dict(project=project, name=name).items()
                           if v is not None})
        self._settings = settings
        self._run = run
        self._loggable = Loggable("CohortTracker")

    def _start(self) -> Any:
        if self._run is None:
            state = PartialState()
            self._run = start_run(mode=self._mode, rank=state.process_index,
                                  world_size=state.num_processes, settings=self._settings,
                                  init_kwargs=self._init)
        return self._run

    @property
    def tracker(self) -> Any:
        """The ``cohort.Run`` (started on first use). None on processes that do not log."""
        if self.main_process_only and not PartialState().is_main_process:
            return None
        return self._start()

    @on_main_process
    def store_init_configuration(self, values: Dict[str, Any]) -> None:
        """``values`` become the run's config."""
        self._start().config.update(values)

    @on_main_process
    def log(self, values: Dict[str, Any], step: Optional[int] = None, **kwargs: Any) -> None:
        """Logs the numbers of ``values`` (nested dicts as ``a/b``) at the run's step ``step``
        (the next step when None). str values, which accelerate allows and a metric cannot be,
        go to the run's summary; values no metric can be (arrays and tensors of several
        elements, lists of numbers) are left out, with one warning per key."""
        run = self._start()
        numbers_only, texts = {}, {}
        for k, v in values.items():
            if isinstance(v, (str, bytes)):
                texts[k] = v if isinstance(v, str) else v.decode(errors="replace")
            elif v is None:
                continue
            else:
                numbers_only[k] = v
        numbers_only = self._loggable(numbers_only)  # arrays, lists: left out, one warning
        if texts:
            run.summary.update(texts)
        if numbers_only or step is not None:
            run.log(numbers_only, step=step, **{k: v for k, v in kwargs.items()
                                                if k == "commit"})

    @on_main_process
    def finish(self) -> None:
        """Finishes the run (``accelerator.end_training()``)."""
        if self._run is not None:
            self._run.finish()


