"""init() arguments and Run attributes that scripts written for the vendor's SDK use, in disabled
mode (no server): config files and config_include_keys / config_exclude_keys (its
wandb_helper.parse_config), run.dir, run.url / get_url(), run.resumed, run.starting_step,
run.save, run.log_code, run.mark_preempting, and cohort.save / cohort.log_artifact.
test_wandb_compat_server.py checks them against a real server."""
import os
import shutil
import sys
import warnings

import pytest

import sdk_helpers  # noqa: F401  (makes `cohort` importable)
import cohort


@pytest.fixture(autouse=True)
def no_current_run():
    cohort.teardown()
    yield
    cohort.teardown()


def disabled(**kw):
    return cohort.init(mode="disabled", reinit="finish_previous", **kw)


# -- config ----------------------------------------------------------------------------------------
def test_config_exclude_and_include_keys_apply_to_the_top_level_keys():
    cfg = {"lr": 0.1, "batch": 32, "model": {"depth": 4}}
    assert dict(disabled(config=cfg, config_exclude_keys=["batch"]).config) == {
        "lr": 0.1, "model": {"depth": 4}}
    assert dict(disabled(config=cfg, config_include_keys=["lr", "model"]).config) == {
        "lr": 0.1, "model": {"depth": 4}}
    assert dict(disabled(config=cfg, config_include_keys="lr").config) == {"lr": 0.1}
    assert dict(disabled(config=cfg, config_exclude_keys=[]).config) == cfg


def test_config_exclude_and_include_keys_together_are_a_usage_error():
    with pytest.raises(cohort.UsageError, match="config_exclude_keys or config_include_keys"):
        disabled(config={"a": 1}, config_exclude_keys=["a"], config_include_keys=["a"])


def test_config_from_a_yaml_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("lr: 0.1\nlayers: [64, 32]\nopt:\n  name: adam\n")
    run = disabled(config=str(path), config_exclude_keys=["layers"])
    assert dict(run.config) == {"lr": 0.1, "opt": {"name": "adam"}}
    assert dict(disabled(config=path).config)["layers"] == [64, 32]  # a pathlib.Path too


def test_config_from_a_vendor_config_defaults_file(tmp_path):
    path = tmp_path / "config-defaults.yaml"
    path.write_text("wandb_version: 1\n\nlr:\n  desc: the learning rate\n  value: 0.01\n"
                    "epochs:\n  value: 10\n")
    assert dict(disabled(config=str(path)).config) == {"lr": 0.01, "epochs": 10}


def test_config_from_a_json_file_needs_no_pyyaml(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` fails
    path = tmp_path / "config.json"
    path.write_text('{"lr": 0.2, "seed": 3}')
    assert dict(disabled(config=str(path)).config) == {"lr": 0.2, "seed": 3}


def test_a_yaml_file_without_pyyaml_says_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)
    path = tmp_path / "config.yaml"
    path.write_text("lr: 0.1\n")
    with pytest.raises(ImportError, match=r"needs PyYAML: `pip install pyyaml`"):
        disabled(config=str(path))


def test_bad_config_files_are_usage_errors_naming_the_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(cohort.UsageError, match=r"init\(config=.*nope.yaml'\): cannot read"):
        disabled(config=str(missing))
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(cohort.UsageError, match="expected a mapping of config keys, got a list"):
        disabled(config=str(tmp_path / "list.yaml"))
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(cohort.UsageError, match="not valid JSON"):
        disabled(config=str(tmp_path / "bad.json"))
    (tmp_path / "empty.yaml").write_text("")
    with pytest.warns(RuntimeWarning, match="the file is empty"):
        assert dict(disabled(config=str(tmp_path / "empty.yaml")).config) == {}


def test_a_config_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="config must be a dict, an argparse.Namespace or the path"):
        disabled(config=3)


# -- run attributes --------------------------------------------------------------------------------
def test_a_disabled_run_has_a_files_dir_no_url_and_was_not_resumed():
    run = disabled()
    assert os.path.isdir(run.dir) and run.dir == run.dir  # made once
    with open(os.path.join(run.dir, "model.pt"), "w") as f:
        f.write("x")
    assert run.url == "" and run.get_url() is None
    assert run.resumed is False and run.starting_step == 0
    assert run.mark_preempting() is None
    shutil.rmtree(run.dir)


def test_log_code_is_a_warned_no_op():
    run = disabled()
    with pytest.warns(RuntimeWarning, match=r"run.log_code\('src'\) does nothing.*"
                                            r"run.log_artifact\('src', name='source', "
                                            r"type='code'\)"):
        assert run.log_code("src") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run.log_code() is None  # once a run


def test_save_checks_its_policy_and_uploads_nothing():
    run = disabled()
    with pytest.raises(ValueError, match='policy must be "live", "end" or "now"'):
        run.save("*.pt", policy="sometimes")
    assert run.save("*.pt") == []


def test_module_level_save_and_log_artifact_need_a_run(tmp_path):
    with pytest.raises(cohort.UsageError, match=r"cohort.save: no run; call cohort.init\(\)"):
        cohort.save("model.pt")
    with pytest.raises(cohort.UsageError, match=r"cohort.log_artifact: no run"):
        cohort.log_artifact(str(tmp_path), name="m", type="model")
    disabled()
    assert cohort.save("model.pt", policy="end") == []
    # The current run's log_artifact (a disabled run refuses it, naming why).
    with pytest.raises(cohort.UsageError, match="log_artifact: this run is disabled"):
        cohort.log_artifact(str(tmp_path), name="m", type="model")


def test_the_module_exports_the_new_functions():
    for name in ("save", "log_artifact"):
        assert name in cohort.__all__ and callable(getattr(cohort, name))
