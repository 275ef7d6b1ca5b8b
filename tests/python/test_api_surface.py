"""The seed SDK's API surface, in disabled mode (no server, no agent): names, module state,
context manager, reinit rules, config and summary objects."""
import argparse
import warnings

import pytest

import sdk_helpers  # noqa: F401  (makes `cohort` importable)
import cohort
from conftest import project_version


@pytest.fixture(autouse=True)
def no_current_run():
    cohort.teardown()
    yield
    cohort.teardown()


def disabled(**kw):
    return cohort.init(mode="disabled", **kw)


def test_module_exports_the_seed_api():
    for name in ("init", "log", "finish", "setup", "Settings", "Run", "run", "config", "summary",
                 "login", "require", "Error", "UsageError", "CommError", "teardown",
                 "define_metric"):
        assert hasattr(cohort, name), name


def test_version_is_the_project_version():
    assert cohort.__version__ == project_version()


def test_run_is_none_before_init_and_after_finish():
    assert cohort.run is None
    run = disabled()
    assert cohort.run is run
    run.finish()
    assert cohort.run is None


def test_module_log_without_a_run_raises_usage_error():
    with pytest.raises(cohort.UsageError, match="init"):
        cohort.log({"a": 1})


def test_module_log_and_finish_use_the_current_run():
    run = disabled()
    cohort.log({"a": 1.0})
    cohort.finish()
    assert run.finished
    assert cohort.run is None


def test_disabled_run_has_an_id_name_and_no_url():
    run = disabled(name="exp")
    assert len(run.id) == 8 and run.id.isalnum()
    assert run.name == "exp"
    assert run.disabled
    assert run.url == ""


def test_disabled_run_keeps_the_given_id():
    assert disabled(id="myrun-1").id == "myrun-1"


def test_context_manager_returns_the_run_and_finishes_it():
    with disabled() as run:
        run.log({"x": 1})
        assert not run.finished
    assert run.finished


def test_context_manager_finishes_on_exception_and_reraises():
    with pytest.raises(RuntimeError, match="boom"):
        with disabled() as run:
            raise RuntimeError("boom")
    assert run.finished


def test_log_after_finish_raises_usage_error():
    run = disabled()
    run.finish()
    with pytest.raises(cohort.UsageError, match="finished"):
        run.log({"x": 1})


def test_finish_is_idempotent():
    run = disabled()
    run.finish()
    run.finish(exit_code=3)
    assert run.finished


def test_second_init_returns_the_previous_run_with_a_warning():
    # The vendor SDK's default outside notebooks (reinit="default": "return_previous").
    first = disabled()
    with pytest.warns(UserWarning, match=rf"run {first.id} is still going.*returning it.*"
                                         r"reinit='finish_previous'"):
        assert disabled() is first
    assert not first.finished and cohort.run is first
    with pytest.warns(UserWarning, match="returning it"):
        assert disabled(reinit="default") is first
    assert not first.finished


def test_reinit_finish_previous_and_true_finish_the_previous_run():
    first = disabled()
    second = disabled(reinit="finish_previous")
    assert first.finished and not second.finished
    assert cohort.run is second
    third = disabled(reinit=True)
    assert second.finished and not third.finished and cohort.run is third


def test_reinit_return_previous_returns_the_same_run():
    first = disabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for: no warning
        assert disabled(reinit="return_previous") is first
        assert disabled(reinit=False) is first
    assert not first.finished


def test_reinit_create_new_keeps_both_runs_going_and_the_current_run():
    # As the vendor SDK's: the new run does not become cohort.run (nor take cohort.log) while
    # another run is current.
    first = disabled()
    second = disabled(reinit="create_new")
    assert not first.finished and not second.finished
    assert cohort.run is first
    cohort.log({"a": 1.0})  # the current run's
    # The default returns the most recent run still going, without making it current.
    with pytest.warns(UserWarning, match=second.id):
        assert disabled() is second
    assert cohort.run is first
    first.finish()
    assert cohort.run is None and not second.finished
    third = disabled(reinit="create_new")  # no current run: it becomes the current one
    assert cohort.run is third


def test_reinit_finish_previous_finishes_every_run_still_going():
    first = disabled()
    second = disabled(reinit="create_new")
    third = disabled(reinit="finish_previous")
    assert first.finished and second.finished and not third.finished
    assert cohort.run is third


def test_reinit_default_finishes_the_previous_run_in_a_notebook(monkeypatch):
    import types
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: object()  # an interactive shell
    monkeypatch.setitem(__import__("sys").modules, "IPython", fake)
    first = disabled()
    second = disabled()
    assert first.finished and not second.finished and cohort.run is second
    fake.get_ipython = lambda: None  # IPython imported, but no shell: a script
    with pytest.warns(UserWarning, match="returning it"):
        assert disabled() is second


def test_bad_reinit_is_a_usage_error():
    with pytest.raises(cohort.UsageError, match="reinit must be one of"):
        disabled(reinit="sometimes")


def test_resume_must_with_a_run_going_is_a_usage_error():
    first = disabled()
    with pytest.raises(cohort.UsageError, match=rf"resume='must'.*{first.id}.*create_new"):
        disabled(id="other", resume="must")
    assert not first.finished


def test_unknown_init_argument_is_a_type_error():
    with pytest.raises(TypeError, match="no_such_arg"):
        disabled(no_such_arg=1)


def test_seed_init_arguments_without_meaning_are_accepted():
    run = disabled(save_code=True, allow_val_change=True, sync_tensorboard=False)
    assert not run.finished


def test_invalid_resume_value_raises_usage_error():
    with pytest.raises(cohort.UsageError, match="resume"):
        disabled(resume="sometimes")


def test_init_arguments_surface_on_the_run():
    run = disabled(group="DDP", job_type="worker", tags=["a", "b"], notes="n")
    assert (run.group, run.job_type, run.tags, run.notes) == ("DDP", "worker", ("a", "b"), "n")


def test_a_str_tag_is_one_tag():
    run = disabled(tags="baseline")
    assert run.tags == ("baseline",)
    assert run._init_args["tags"] == ["baseline"]


@pytest.mark.parametrize("arg,value", [("name", 123), ("project", 1.5), ("group", ["g"]),
                                       ("id", 7), ("entity", b"e"), ("notes", 3),
                                       ("job_type", object())])
def test_init_names_an_argument_of_the_wrong_type(arg, value):
    with pytest.raises(TypeError, match=rf"init: {arg} must be a str, got"):
        disabled(**{arg: value})
    assert cohort.run is None


def test_init_tags_of_the_wrong_type_raise_naming_tags():
    with pytest.raises(TypeError, match="init: tags must be str, got int"):
        disabled(tags=["a", 1])
    with pytest.raises(TypeError, match="init: tags must be a list of str, got int"):
        disabled(tags=5)


def test_module_define_metric_uses_the_current_run(monkeypatch):
    with pytest.raises(cohort.UsageError, match="define_metric: no run"):
        cohort.define_metric("loss", summary="min")
    run = disabled()
    calls = []
    monkeypatch.setattr(run, "define_metric", lambda *a, **k: calls.append((a, k)))
    cohort.define_metric("val/*", step_metric="epoch", summary="max", goal="maximize")
    assert calls == [(("val/*",), dict(step_metric="epoch", step_sync=None, hidden=None,
                                       summary="max", goal="maximize", overwrite=None))]
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        cohort.define_metric(3)


def test_config_from_init_reads_as_items_and_attributes():
    run = disabled(config={"lr": 0.1, "layers": [1, 2]})
    assert run.config["lr"] == 0.1
    assert run.config.layers == [1, 2]
    assert cohort.config is run.config


def test_config_accepts_an_argparse_namespace():
    run = disabled(config=argparse.Namespace(lr=0.5, epochs=3))
    assert run.config.as_dict() == {"lr": 0.5, "epochs": 3}


def test_config_set_update_delete():
    run = disabled()
    run.config.lr = 0.2
    run.config["batch"] = 32
    run.config.update({"a": 1}, allow_val_change=True)
    run.config.setdefaults({"a": 2, "b": 3})
    del run.config.batch
    assert run.config.as_dict() == {"lr": 0.2, "a": 1, "b": 3}
    with pytest.raises(AttributeError):
        run.config.missing


def test_config_rejects_non_str_keys():
    run = disabled()
    with pytest.raises(TypeError, match="str"):
        run.config[1] = 2


def test_summary_is_dict_like_and_published_on_the_module():
    run = disabled()
    run.summary["acc"] = 0.9
    run.summary.update({"loss": 0.1})
    assert dict(run.summary) == {"acc": 0.9, "loss": 0.1}
    assert cohort.summary is run.summary


_WRITES = [
    ("config['x'] = 1", lambda d: d.__setitem__("x", 1)),
    ("config.x = 1", lambda d: setattr(d, "x", 1)),
    ("update", lambda d: d.update({"x": 1})),
    ("update kwargs", lambda d: d.update(x=1)),
    ("setdefault", lambda d: d.setdefault("x", 1)),
    ("setdefaults", lambda d: d.setdefaults({"x": 1})),
    ("del", lambda d: d.__delitem__("x")),
]


@pytest.mark.parametrize("what", ["config", "summary"])
@pytest.mark.parametrize("write", [w for _, w in _WRITES], ids=[n for n, _ in _WRITES])
def test_module_config_and_summary_refuse_writes_without_a_run(what, write):
    """As the seed's SDK ("You must call wandb.init() before wandb.config.update"): a write with
    no run to receive it raises rather than being thrown away; reads find nothing."""
    assert cohort.run is None
    with pytest.raises(cohort.UsageError, match=rf"cohort\.{what}.*no run; call cohort\.init\(\)"):
        write(getattr(cohort, what))
    run = disabled()
    run.finish()  # after finish: the same
    detached = getattr(cohort, what)
    with pytest.raises(cohort.UsageError, match="call cohort.init"):
        write(detached)
    assert dict(detached) == {} and "x" not in detached and detached.get("x") is None
    assert isinstance(detached, cohort.Config if what == "config" else cohort.Summary)


def test_module_config_is_the_runs_between_init_and_finish():
    run = disabled()
    cohort.config["x"] = 1
    cohort.summary.update({"y": 2})
    assert run.config["x"] == 1 and run.summary["y"] == 2


@pytest.mark.parametrize("call", [
    lambda run: run.define_metric("loss", summary="min"),
    lambda run: cohort.define_metric("acc", summary="max,last"),
    lambda run: run.define_metric("acc", "epoch", None, None, "mean"),
])
def test_define_metric_summary_other_than_last_warns_that_it_is_not_applied(call):
    run = disabled()
    match = r"summary='(min|max,last|mean)'\) is not applied"
    with pytest.warns(RuntimeWarning, match=match) as caught:
        call(run)
    assert caught[0].filename == __file__  # points at the script's call
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once a run
        run.define_metric("other", summary="max")
        run.define_metric("x", summary="last")


def test_define_metric_summary_last_or_none_given_says_nothing():
    run = disabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run.define_metric("loss", summary="last")
        run.define_metric("loss", step_metric="epoch", goal="minimize")


_VENDOR_ENV = {"WANDB_NAME": "from-env", "WANDB_RUN_GROUP": "env-group",
               "WANDB_JOB_TYPE": "env-job", "WANDB_TAGS": "a, b,,c", "WANDB_NOTES": "env notes"}


def test_init_falls_back_on_the_seed_sdks_environment(monkeypatch):
    for k, v in _VENDOR_ENV.items():
        monkeypatch.setenv(k, v)
    run = disabled()
    assert (run.name, run.group, run.job_type, run.tags, run.notes) == (
        "from-env", "env-group", "env-job", ("a", "b", "c"), "env notes")


def test_init_arguments_and_settings_win_over_the_seed_sdks_environment(monkeypatch):
    for k, v in _VENDOR_ENV.items():
        monkeypatch.setenv(k, v)
    run = disabled(name="arg", group="g", job_type="j", tags=[], notes="n")
    assert (run.name, run.group, run.job_type, run.tags, run.notes) == ("arg", "g", "j", (), "n")
    run = disabled(reinit="finish_previous",
                   settings=cohort.Settings(run_group="sg", run_tags=["st"]))
    assert run._init_args["group"] is None and run._init_args["tags"] is None
    assert run.name == "from-env"


def test_seed_compat_helpers_are_no_ops():
    run = disabled()
    assert run.define_metric("loss", step_metric="epoch") is None
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 1)
    assert run.watch(model, log="all", log_freq=1) is None
    # A disabled run adds no hooks to the model: its training loop costs what it did.
    assert not model._forward_hooks and not model.weight._backward_hooks
    model(torch.ones(1, 2)).sum().backward()
    with pytest.raises(cohort.UsageError, match="torch.nn.Module"):
        run.watch(object())  # misuse is still named, as in any other mode
    assert cohort.require("service") is None
    cohort.setup(cohort.Settings(mode="disabled"))


def test_seed_shared_mode_snippet_runs_unchanged_in_disabled_mode(monkeypatch):
    monkeypatch.setenv("COHORT_MODE", "disabled")
    import cohort as wandb

    entity = "team"
    project = "proj"
    run = wandb.init(
        entity=entity,
        project=project,
        settings=wandb.Settings(
            x_label="rank_0",
            mode="shared",
            x_primary=True,
            x_stats_gpu_device_ids=[0, 1],
        ),
    )
    run_id = run.id
    worker = wandb.init(
        entity=entity,
        project=project,
        settings=wandb.Settings(x_label="rank_1", mode="shared", x_primary=False),
        id=run_id,
        reinit="create_new",
    )
    assert worker.id == run_id
    worker.log({"loss": 1.0})
    worker.finish()
    run.finish()


def test_settings_reinit_is_taken_when_init_does_not_give_it():
    # Settings(reinit=...) was dropped as an unknown setting: a sweep loop relying on it logged
    # every trial into the first run.
    first = cohort.init(mode="disabled")
    second = cohort.init(mode="disabled", settings=cohort.Settings(reinit="finish_previous"))
    assert second is not first and first.finished
    third = cohort.init(mode="disabled", settings=cohort.Settings(reinit=True))
    assert third is not second and second.finished
    with pytest.raises(TypeError, match="reinit must be a bool or a str"):
        cohort.Settings(reinit=3)
    third.finish()
