"""cohort.Settings: the seed's fields, validation, and how they map onto the C++ client's
settings (cohort::Settings)."""
import pickle
import warnings

import pytest

import sdk_helpers  # noqa: F401
import cohort
from cohort import _client_settings as cs


def test_seed_shared_mode_fields_are_accepted():
    s = cohort.Settings(x_label="rank_0", mode="shared", x_primary=True,
                        x_stats_gpu_device_ids=[0, 1], x_update_finish_state=False,
                        init_timeout=5, finish_timeout=7, x_stats_sampling_interval=0.5)
    assert s.shared
    assert (s.x_label, s.x_primary, s.x_stats_gpu_device_ids) == ("rank_0", True, [0, 1])
    assert (s.init_timeout, s.finish_timeout, s.x_stats_sampling_interval) == (5.0, 7.0, 0.5)


def test_unset_fields_are_none():
    s = cohort.Settings()
    assert s.mode is None and s.x_label is None and s.init_timeout is None


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="mode"):
        cohort.Settings(mode="sometimes")


def test_seed_mode_aliases():
    assert cohort.Settings(mode="dryrun").mode == "offline"
    assert cohort.Settings(mode="run").mode == "online"


def test_x_primary_must_be_a_bool():
    with pytest.raises(TypeError, match="x_primary"):
        cohort.Settings(x_primary="yes")


def test_gpu_ids_must_be_non_negative_ints():
    with pytest.raises(TypeError):
        cohort.Settings(x_stats_gpu_device_ids="0,1")
    with pytest.raises(ValueError):
        cohort.Settings(x_stats_gpu_device_ids=[-1])


def test_timeouts_must_be_positive():
    with pytest.raises(ValueError, match="init_timeout"):
        cohort.Settings(init_timeout=0)


def test_seed_settings_without_meaning_are_accepted_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cohort.Settings(start_method="thread", silent=True, _disable_stats=True)


def test_unknown_settings_warn_and_are_ignored():
    with pytest.warns(UserWarning, match="x_lable"):
        s = cohort.Settings(x_lable="rank_0")
    assert s.x_label is None


def test_setting_an_unknown_attribute_raises():
    with pytest.raises(AttributeError):
        cohort.Settings().not_a_field = 1


def test_update_and_to_dict():
    s = cohort.Settings(mode="shared")
    s.update({"x_label": "rank_3"}, x_primary=False)
    assert s.to_dict(non_default=True) == {"mode": "shared", "x_label": "rank_3",
                                           "x_primary": False}


def test_settings_pickle_round_trip():
    s = cohort.Settings(mode="shared", x_label="rank_1", x_stats_gpu_device_ids=[2])
    assert pickle.loads(pickle.dumps(s)) == s


def test_init_accepts_settings_as_a_dict():
    run = cohort.init(mode="disabled", settings={"x_label": "rank_9"}, reinit="create_new")
    assert run.settings.x_label == "rank_9"
    run.finish()


def test_init_rejects_settings_of_another_type():
    with pytest.raises(TypeError, match="settings"):
        cohort.init(mode="disabled", settings=3)


def test_shared_worker_maps_to_the_client_settings():
    s = cohort.Settings(mode="shared", x_label="rank_2", x_primary=False,
                        x_update_finish_state=False, x_stats_gpu_device_ids=[0, 1],
                        x_stats_sampling_interval=0.25, init_timeout=3, finish_timeout=4,
                        x_agent="inprocess", console="off")
    mode, shared = cs.effective_mode(None, s)
    ns = cs.native_settings(s, mode=mode, shared=shared, run_id="abc123")
    assert (mode, ns.shared, ns.label, ns.primary, ns.update_finish_state) == (
        "", True, "rank_2", False, False)
    assert ns.stats_gpu_device_ids == [0, 1]
    assert (ns.stats_sampling_interval_s, ns.init_timeout_s, ns.finish_timeout_s) == (
        0.25, 3.0, 4.0)
    assert (ns.transport, ns.capture_console, ns.run_id) == ("inprocess", False, "abc123")


def test_plain_run_writer_is_primary_and_shared_defaults_are_left_to_torchrun():
    plain = cs.native_settings(cohort.Settings())
    assert plain.primary is True and plain.shared is False
    shared = cs.native_settings(cohort.Settings(mode="shared"), shared=True)
    assert shared.primary is None and shared.update_finish_state is None
    assert shared.label == ""  # the C++ client makes it rank_<RANK> or <host>-<random>


def test_init_mode_wins_over_settings_mode_but_keeps_shared():
    mode, shared = cs.effective_mode("offline", cohort.Settings(mode="shared"))
    assert (mode, shared) == ("offline", True)
    mode, shared = cs.effective_mode("disabled", cohort.Settings(mode="online"))
    assert (mode, shared) == ("disabled", False)


def test_disable_stats_sets_a_zero_interval():
    ns = cs.native_settings(cohort.Settings(x_disable_stats=True))
    assert ns.stats_sampling_interval_s == 0.0
