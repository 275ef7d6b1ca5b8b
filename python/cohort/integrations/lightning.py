"""``CohortLogger``: Cohort as a PyTorch Lightning logger.

::

    from cohort.integrations.lightning import CohortLogger

    logger = CohortLogger(project="mnist", log_model=True)
    trainer = lightning.pytorch.Trainer(logger=logger, max_epochs=3)
    logger.watch(model, log="all", log_freq=100)
    trainer.fit(model, data)

It follows the vendor's ``WandbLogger``: ``log_hyperparams`` goes to the run's config,
``log_metrics(metrics, step)`` logs at the run's step ``step`` (Lightning's global step) with
``trainer/global_step``, ``watch`` is ``run.watch``, and with ``log_model`` the checkpoints that
``ModelCheckpoint`` saves become versions of the artifact ``model-<run id>`` (type ``model``;
its one file ``model.ckpt``; aliases ``latest`` and ``best``; metadata: the score, the original
file name and the callback's settings): as they are saved with ``log_model="all"`` (or
``True`` with ``save_top_k=-1``), at the end of a successful fit with ``log_model=True``.

Lightning's rank-zero semantics: only global rank 0 logs (the methods are
``@rank_zero_only``; ``experiment`` is a no-op object elsewhere). ``mode="shared"`` makes
every rank a writer of one shared run (``rank_<rank>``, rank 0 its primary); checkpoints are
still logged by rank 0 only.
"""
from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, Optional, Union

from lightning.fabric.loggers.logger import _DummyExperiment
from lightning.fabric.utilities.logger import _add_prefix, _convert_params
from lightning.fabric.utilities.logger import _sanitize_callable_params
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.loggers.logger import Logger
from lightning.pytorch.loggers.utilities import _scan_checkpoints

import cohort

from ._common import StepValues, check_mode, start_run

def _rank() -> int:
    return int(rank_zero_only.rank or 0)


def _everywhere_or_rank_zero(fn):
    """``@rank_zero_only``, except that in shared mode every rank runs ``fn``."""
    def wrapped(self, *args, **kwargs):
        if self._mode == "shared" or _rank() == 0:
            return fn(self, *args, **kwargs)
        return None
    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    wrapped.__qualname__ = fn.__qualname__
    return wrapped


class CohortLogger(Logger):
    """Logs a Lightning run to Cohort (see the module docstring).

    Args:
        name: the run's display name.
        project: the project (default ``COHORT_PROJECT``, else the client's default).
        version / id: the run id (to resume a run, or to name it).
        log_model: ``False`` (default), ``True`` (checkpoints at the end) or ``"all"`` (every
            checkpoint as it is saved).
        prefix: put before every metric key (joined with ``-``, as Lightning's loggers do).
        experiment: an already started ``cohort.Run`` to log to.
        checkpoint_name: the checkpoint artifact's name (default ``model-<run id>``).
        mode: None (rank 0 logs) or ``"shared"`` (every rank, one shared run).
        settings: a ``cohort.Settings`` (or dict) for the run started here.
        **kwargs: more ``cohort.init`` arguments (``group``, ``tags``, ``entity``, ...).
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(self, name: Optional[str] = None, project: Optional[str] = None,
                 version: Optional[str] = None, id: Optional[str] = None,
                 save_dir: Optional[str] = None,
                 log_model: Union[Literal["all"], bool] = False, prefix: str = "",
                 experiment: Any = None, checkpoint_name: Optional[str] = None,
                 mode: Optional[str] = None, settings: Any = None, **kwargs: Any) -> None:
        super().__init__()
        if log_model not in (False, True, "all"):
            raise ValueError(f"log_model must be False, True or 'all', got {log_model!r}")
        self._mode = check_mode(mode)
        self._init: Dict[str, Any] = dict(kwargs)
        self._init.update({k: v for k, v in dict(name=name, project=project,
                                                 id=version or id, dir=save_dir).items()
                           if v is not None})
        self._name = name
        self._id = version or id
        self._save_dir = save_dir
        self._settings = settings
        self._log_model = log_model
        self._prefix = prefix
        self._experiment = experiment
        self._checkpoint_name = checkpoint_name
        self._checkpoint_callback: Optional[Any] = None
        self._logged_model_time: Dict[str, float] = {}
        self._step_hook: Any = None
        self._step_values = StepValues()
        self._world_size = int(os.environ.get("WORLD_SIZE", "1") or 1)

    # -- the run ----------------------------------------------------------------------------------
    def _start(self) -> Any:
        if self._experiment is None:
            self._experiment = start_run(mode=self._mode, rank=_rank(),
                                         world_size=self._world_size, settings=self._settings,
                                         init_kwargs=self._init)
        return self._experiment

    @property
    def experiment(self) -> Any:
        """The ``cohort.Run`` (started on first use); a no-op object on ranks other than 0,
        unless in shared mode."""
        if self._mode != "shared" and _rank() > 0:
            return _DummyExperiment()
        return self._start()

    def __getstate__(self) -> Dict[str, Any]:
        # A logger pickled for spawned processes: the run goes along as its id (a Run pickles
        # as a writer of the same run, which is what a spawned rank should be in shared mode).
        state = self.__dict__.copy()
        if self._experiment is not None and not isinstance(self._experiment, _DummyExperiment):
            state["_id"] = self._experiment.id
            state["_init"] = dict(self._init, id=self._experiment.id)
        state["_experiment"] = None
        state["_checkpoint_callback"] = None
        state["_step_hook"] = None
        return state

    # -- Logger API -----------------------------------------------------------------------------
    @property
    def name(self) -> Optional[str]:
        """The project (as the vendor's logger: checkpoints go under ``<save_dir>/<name>``)."""
        if self._experiment is not None and not isinstance(self._experiment, _DummyExperiment):
            return self._experiment.project
        return self._init.get("project")

    @property
    def version(self) -> Optional[str]:
        """The run id (the one given before the run started)."""
        if self._experiment is not None and not isinstance(self._experiment, _DummyExperiment):
            return self._experiment.id
        return self._id

    @property
    def save_dir(self) -> Optional[str]:
        return self._save_dir

    @_everywhere_or_rank_zero
    def log_hyperparams(self, params: Union[Dict[str, Any], Namespace], *args: Any,
                        **kwargs: Any) -> None:
        params = _convert_params(params)
        params = _sanitize_callable_params(params)
        self.experiment.config.update(params)

    @_everywhere_or_rank_zero
    def log_metrics(self, metrics: Mapping[str, float], step: Optional[int] = None) -> None:
        metrics = _add_prefix(dict(metrics), self._prefix, self.LOGGER_JOIN_CHAR)
        if step is None:
            self.experiment.log(dict(metrics))
            return
        values = self._step_values.new(int(step), dict(metrics, **{"trainer/global_step": step}))
        if values:
            self.experiment.log(values, step=int(step))

    @_everywhere_or_rank_zero
    def log_image(self, key: str, images: List[Any], step: Optional[int] = None,
                  **kwargs: Any) -> None:
        """Logs ``images`` (arrays, tensors, PIL images or paths) as one step's set of
        ``cohort.Image`` under ``key``; each keyword is a list with one value per image
        (``caption=[...]``), as the vendor's WandbLogger takes them."""
        self._log_media(key, images, step, kwargs, lambda item, kw: cohort.Image(item, **kw))

    @_everywhere_or_rank_zero
    def log_audio(self, key: str, audios: List[Any], step: Optional[int] = None,
                  **kwargs: Any) -> None:
        """Logs ``audios`` as one step's set of ``cohort.Audio`` (``sample_rate=[...]``)."""
        self._log_media(key, audios, step, kwargs, lambda item, kw: cohort.Audio(item, **kw))

    @_everywhere_or_rank_zero
    def log_video(self, key: str, videos: List[Any], step: Optional[int] = None,
                  **kwargs: Any) -> None:
        """Logs video files as one step's set of ``cohort.Video``."""
        self._log_media(key, videos, step, kwargs, lambda item, kw: cohort.Video(item, **kw))

    @_everywhere_or_rank_zero
    def log_table(self, key: str, columns: Optional[List[str]] = None,
                  data: Optional[List[List[Any]]] = None, dataframe: Any = None,
                  step: Optional[int] = None) -> None:
        """Logs a ``cohort.Table`` (``columns`` and ``data`` rows, or a pandas ``dataframe``)."""
        self.log_metrics({key: cohort.Table(columns=columns, data=data, dataframe=dataframe)},
                         step)

    def _log_media(self, key: str, items: List[Any], step: Optional[int],
                   kwargs: Dict[str, Any], make: Any) -> None:
        if not isinstance(items, list):
            raise TypeError(f'Expected a list as "{key}" media, found {type(items).__name__}')
        n = len(items)
        for k, v in kwargs.items():
            if len(v) != n:
                raise ValueError(f"Expected {n} items but only found {len(v)} for {k}")
        values = [make(item, {k: kwargs[k][i] for k in kwargs}) for i, item in enumerate(items)]
        self.log_metrics({key: values}, step)

    @_everywhere_or_rank_zero
    def watch(self, model: Any, log: Optional[str] = "gradients", log_freq: int = 100,
              log_graph: bool = False) -> None:
        """``run.watch(model, log, log_freq)``: histograms of gradients and/or parameters every
        ``log_freq``-th training forward pass of ``model`` (call it through ``self(x)`` in
        ``training_step``, or watch the inner network that is called), at the global step of
        that batch: the row Lightning logs the batch's metrics into."""
        run = self.experiment
        run.watch(model, log=log, log_freq=log_freq, log_graph=log_graph)
        if log is not None and self._step_hook is None:
            self._step_hook = model.register_forward_pre_hook(self._at_batch_step)

    def _at_batch_step(self, module: Any, inputs: Any) -> None:
        # watch() logs at the run's current step (commit=False); make it the step Lightning
        # logs this batch at (the batches that stepped so far: trainer.global_step with one
        # optimizer), so the histograms share the batch's row.
        trainer = getattr(module, "_trainer", None)
        run = self._experiment
        if not module.training or trainer is None or run is None:
            return
        loop = getattr(getattr(trainer, "fit_loop", None), "epoch_loop", None)
        step = getattr(loop, "_batches_that_stepped", None)
        if step is None:
            step = trainer.global_step
        run.log({}, step=int(step), commit=False)

    @rank_zero_only
    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        if self._log_model == "all" or (self._log_model is True
                                        and getattr(checkpoint_callback, "save_top_k", 0) == -1):
            self._scan_and_log_checkpoints(checkpoint_callback)
        elif self._log_model is True:
            self._checkpoint_callback = checkpoint_callback

    @_everywhere_or_rank_zero
    def finalize(self, status: str) -> None:
        if status != "success":
            return  # checkpoints are logged on success only, as the vendor's logger does
        if (_rank() == 0 and self._checkpoint_callback is not None
                and self._experiment is not None):
            self._scan_and_log_checkpoints(self._checkpoint_callback)

    def _scan_and_log_checkpoints(self, checkpoint_callback: Any) -> None:
        """Logs the checkpoints not logged yet and returns once they are read (hashed and
        copied to the agent's staging): ``ModelCheckpoint`` deletes the files it no longer
        keeps right after this hook (``_remove_checkpoint``) and rewrites ``last.ckpt`` in
        place at its next save, which would fail the version or tear its bytes."""
        logged: List[Any] = []
        try:
            self._log_checkpoints(checkpoint_callback, logged)
        finally:
            for art in logged:
                art._join(None)

    def _log_checkpoints(self, checkpoint_callback: Any, logged: List[Any]) -> None:
        run = self.experiment
        for t, p, s, _tag in _scan_checkpoints(checkpoint_callback, self._logged_model_time):
            score = s.item() if hasattr(s, "item") else s
            metadata = {
                "score": score,
                "original_filename": Path(p).name,
                checkpoint_callback.__class__.__name__: {  # (a weakref.proxy: not type())
                    k: getattr(checkpoint_callback, k)
                    for k in ("monitor", "mode", "save_last", "save_top_k", "save_weights_only",
                              "_every_n_train_steps")
                    if hasattr(checkpoint_callback, k)
                },
            }
            if not self._checkpoint_name:
                self._checkpoint_name = f"model-{run.id}"
            art = cohort.Artifact(self._checkpoint_name, type="model", metadata=metadata)
            art.add_file(p, name="model.ckpt")
            aliases: List[str] = ["best"] if p == checkpoint_callback.best_model_path else []
            logged.append(run.log_artifact(art, aliases=aliases))  # "latest" moves by itself
            self._logged_model_time[p] = t
