"""``CohortCallback``: Cohort for the Hugging Face ``Trainer`` (transformers).

::

    from cohort.integrations.transformers import CohortCallback

    trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ev,
                      callbacks=[CohortCallback(project="bert", log_model="checkpoint")])

It logs what the vendor's ``WandbCallback`` logs (pass ``report_to="none"`` so that the
Trainer does not also start its own integrations):

- every ``logs`` dict of the Trainer, renamed as the vendor does (``loss`` -> ``train/loss``,
  ``eval_loss`` -> ``eval/loss``, ``test_acc`` -> ``test/acc``), with ``train/global_step``, at
  the run's step ``state.global_step``: the Trainer's global step is the step axis;
- the end-of-training numbers (``train_runtime``, ``train_samples_per_second``,
  ``train_steps_per_second``, ``train_loss``, ``total_flos``) in the run's summary only;
- the run's config: ``TrainingArguments.to_dict()`` over the model's config;
- with ``watch="gradients"|"parameters"|"all"``: ``run.watch(model, log=..., log_freq=...)``
  (histograms at the global step of the forward pass that produced them);
- with ``log_model="checkpoint"``: every checkpoint directory the Trainer saves, as a version of
  the artifact ``checkpoint-<run id>`` (type ``model``, aliases ``latest`` and
  ``checkpoint-<step>``); with ``log_model="end"`` (or ``"checkpoint"``): the final model as
  ``model-<run id>``.

Only the main process (``state.is_world_process_zero``) logs, unless ``mode="shared"``: then
every rank joins one shared run as the writer ``rank_<rank>`` (rank 0 its primary).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional

from transformers import TrainerCallback

import cohort

from ._common import Loggable, StepValues, check_mode, numeric, start_run

# The Trainer's end-of-training numbers: the summary only, as the vendor's callback does.
SUMMARY_ONLY = ("train_runtime", "train_samples_per_second", "train_steps_per_second",
                "train_loss", "total_flos")
_WATCH = (None, "gradients", "parameters", "all")
_LOG_MODEL = (None, "checkpoint", "end")


def rewrite_logs(logs: Dict[str, Any]) -> Dict[str, Any]:
    """The vendor's renaming: ``eval_x`` -> ``eval/x``, ``test_x`` -> ``test/x``, anything
    else ``train/x``."""
    out = {}
    for k, v in logs.items():
        if k.startswith("eval_"):
            out["eval/" + k[5:]] = v
        elif k.startswith("test_"):
            out["test/" + k[5:]] = v
        else:
            out["train/" + k] = v
    return out


class CohortCallback(TrainerCallback):
    """Logs a ``transformers.Trainer`` run to Cohort (see the module docstring).

    Args:
        run: an already started ``cohort.Run`` to log to (default: ``cohort.run`` when one is
            going, else a run started at the beginning of training with the arguments below).
        project, name, group, entity, tags, notes, job_type: for ``cohort.init`` (project: default
            ``COHORT_PROJECT``, else the client's default; name: ``args.run_name`` when it is
            not the output directory).
        watch: ``"gradients"``, ``"parameters"``, ``"all"`` or None (default).
        log_freq: forward passes between two ``watch`` histograms (default
            ``max(100, args.logging_steps)``, as the vendor's).
        log_model: ``"checkpoint"``, ``"end"`` or None (default).
        mode: None (the main process logs) or ``"shared"`` (every rank, one shared run).
        settings: a ``cohort.Settings`` (or dict) for the run started here.
        init_kwargs: more ``cohort.init`` arguments.
    """

    def __init__(self, run: Any = None, *, project: Optional[str] = None,
                 name: Optional[str] = None, group: Optional[str] = None,
                 entity: Optional[str] = None, tags: Optional[List[str]] = None,
                 notes: Optional[str] = None, job_type: Optional[str] = None,
                 watch: Optional[str] = None, log_freq: Optional[int] = None,
                 log_model: Optional[str] = None, mode: Optional[str] = None,
                 settings: Any = None, init_kwargs: Optional[Dict[str, Any]] = None) -> None:
        if watch in ("false", False):
            watch = None
        if watch not in _WATCH:
            raise ValueError(f"watch must be 'gradients', 'parameters', 'all' or None, "
                             f"got {watch!r}")
        if log_model in ("false", False):
            log_model = None
        if log_model not in _LOG_MODEL:
            raise ValueError(f"log_model must be 'checkpoint', 'end' or None, got {log_model!r}")
        self._mode = check_mode(mode)
        self._given_run = run
        self._run: Any = None
        self._init = dict(init_kwargs or {})
        self._init.update({k: v for k, v in dict(
            project=project, name=name, group=group, entity=entity, tags=tags, notes=notes,
            job_type=job_type).items() if v is not None})
        self._settings = settings
        self._watch = watch
        self._log_freq = log_freq
        self._log_model = log_model
        self._initialized = False
        self._last: Dict[str, float] = {}     # last logged numbers (artifact metadata)
        self._pending: Optional[cohort.Artifact] = None  # a checkpoint still being hashed
        self._step_values = StepValues()
        self._loggable = Loggable("CohortCallback")

    # -- which processes log ------------------------------------------------------------------
    def _logs_here(self, state: Any) -> bool:
        return self._mode == "shared" or state.is_world_process_zero

    @property
    def run(self) -> Any:
        """The run this callback logs to (None before training starts, and on ranks that do
        not log)."""
        return self._run

    # -- setup ----------------------------------------------------------------------------------
    def setup(self, args: Any, state: Any, model: Any = None, **kwargs: Any) -> None:
        """Starts (or adopts) the run and records the config; called at the start of training
        (or at the first log, for an ``evaluate()`` without ``train()``)."""
        self._initialized = True
        if not self._logs_here(state):
            return
        init = dict(self._init)
        if "name" not in init:
            if state.trial_name is not None:
                init["name"] = state.trial_name
                init.setdefault("group", args.run_name)
            elif args.run_name is not None and args.run_name != args.output_dir:
                init["name"] = args.run_name
        self._run = start_run(run=self._given_run, mode=self._mode, rank=args.process_index,
                              world_size=args.world_size, settings=self._settings,
                              init_kwargs=init)
        config = dict(args.to_dict())
        model_config = getattr(model, "config", None)
        if model_config is not None and hasattr(model_config, "to_dict"):
            config = {**model_config.to_dict(), **config}
        self._run.config.update(config)
        if self._watch is not None and model is not None:
            freq = self._log_freq or max(100, int(args.logging_steps or 0))
            self._run.watch(model, log=self._watch, log_freq=freq)

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        if state.is_hyper_param_search and self._initialized and self._run is not None:
            self._run.finish()  # a run per trial, as the vendor's callback does
            self._run, self._given_run = None, None
            self._initialized = False
            args.run_name = None
        if not self._initialized:
            self.setup(args, state, model, **kwargs)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # watch() logs its histograms at the run's current step (commit=False): make that the
        # global step this optimizer step will have, so they land beside its logs.
        if self._run is not None and self._watch is not None:
            self._run.log({}, step=state.global_step + 1, commit=False)

    def on_log(self, args: Any, state: Any, control: Any, model: Any = None,
               logs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> None:
        if not self._initialized:
            self.setup(args, state, model)
        if self._run is None or not logs:
            return
        if "train_runtime" in logs:
            # The end of training: the Trainer may delete the last checkpoint next
            # (save_total_limit=1 with load_best_model_at_end), before on_train_end.
            self._read_pending()
        summary = {k: v for k, v in logs.items() if k in SUMMARY_ONLY}
        if summary:
            self._run.summary.update(summary)
        values = {}
        for k, v in rewrite_logs({k: v for k, v in logs.items() if k not in SUMMARY_ONLY}).items():
            if isinstance(v, (str, bytes)) or v is None:
                continue  # numbers only (a str metric would fail the whole call)
            values[k] = v
        # compute_metrics may return arrays or lists (a per-class score, a confusion matrix):
        # left out with a warning, as they would fail the whole call inside Trainer.evaluate.
        values = self._loggable(values)
        values["train/global_step"] = state.global_step
        self._last.update(numeric(values))
        values = self._step_values.new(state.global_step, values)
        if values:
            self._run.log(values, step=state.global_step)
        self._last.update(numeric(summary))

    # -- checkpoints ----------------------------------------------------------------------------
    def _read_pending(self) -> None:
        """Returns once the checkpoint logged last was read (hashed and copied to the agent's
        staging): the Trainer may delete its directory from now on."""
        if self._pending is not None:
            self._pending._join(None)
            self._pending = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # The Trainer saves (and may delete old checkpoints, save_total_limit) right after this:
        # the previous checkpoint must have been read (hashed and staged) by then.
        if control.should_save:
            self._read_pending()

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # save_strategy="epoch": should_save is set in on_epoch_end (the Trainer's own flow
        # callback runs first), and the save with its rotation follows.
        if control.should_save:
            self._read_pending()

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._log_model != "checkpoint" or self._run is None or not state.is_world_process_zero:
            return
        path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        if not os.path.isdir(path):
            return
        metadata = dict(self._last)
        metadata["global_step"] = state.global_step
        art = cohort.Artifact(f"checkpoint-{self._run.id}", type="model", metadata=metadata)
        art.add_dir(path)
        self._run.log_artifact(art, aliases=[f"checkpoint-{state.global_step}"])
        self._pending = art
        if control.should_training_stop or (state.max_steps and
                                            state.global_step >= state.max_steps):
            # The last save: with save_total_limit=1 and load_best_model_at_end the Trainer
            # deletes this checkpoint before on_train_end, when it is not the best one.
            self._read_pending()

    def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None,
                     tokenizer: Any = None, **kwargs: Any) -> None:
        self._read_pending()
        if (self._log_model not in ("end", "checkpoint") or self._run is None
                or not state.is_world_process_zero or model is None):
            return
        tmp = tempfile.mkdtemp(prefix="cohort-hf-model-")
        try:
            if hasattr(model, "save_pretrained"):
                model.save_pretrained(tmp, safe_serialization=args.save_safetensors)
            else:
                import torch
                torch.save(model.state_dict(), os.path.join(tmp, "pytorch_model.bin"))
            if tokenizer is not None and hasattr(tokenizer, "save_pretrained"):
                tokenizer.save_pretrained(tmp)
            metadata = dict(self._last)
            if args.load_best_model_at_end and state.best_metric is not None:
                metadata[f"eval/{args.metric_for_best_model}"] = state.best_metric
            metadata["global_step"] = state.global_step
            art = cohort.Artifact(f"model-{self._run.id}", type="model", metadata=metadata)
            art.add_dir(tmp)
            self._run.log_artifact(art)
            art._join(None)  # read (hashed, staged) before the directory goes
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
