"""`run.alert` / `cohort.alert` arguments in disabled mode (no server, no agent): the seed SDK's
forms are accepted (str or AlertLevel level, seconds or timedelta wait), bad ones raise naming
the argument, and the C++ client's own checks (title and text bounds) reach Python."""
import datetime

import pytest

import sdk_helpers  # noqa: F401  (makes `cohort` importable)
import cohort


@pytest.fixture(autouse=True)
def no_current_run():
    cohort.teardown()
    yield
    cohort.teardown()


def test_alert_level_matches_the_seed_sdk():
    assert [l.value for l in cohort.AlertLevel] == ["INFO", "WARN", "ERROR"]
    assert cohort.AlertLevel.WARN == "WARN"


def test_good_arguments_are_accepted_by_a_disabled_run():
    run = cohort.init(mode="disabled")
    run.alert("t", "x")
    run.alert("t", "x", level=cohort.AlertLevel.ERROR, wait_duration=30)
    run.alert("t", "x", level="warn", wait_duration=2.5)
    run.alert("t", "", level="ERROR", wait_duration=datetime.timedelta(minutes=1))
    cohort.alert("t" * 256, "x" * (64 << 10))


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((1, "x"), {}, TypeError, "alert: title must be a str, not int"),
    (("t", None), {}, TypeError, "alert: text must be a str, not NoneType"),
    (("t", "x"), {"level": "DEBUG"}, cohort.UsageError, "level must be one of"),
    (("t", "x"), {"level": 3}, TypeError, "level must be a str or cohort.AlertLevel"),
    (("t", "x"), {"wait_duration": -1}, cohort.UsageError, "wait_duration must be >= 0"),
    (("t", "x"), {"wait_duration": float("inf")}, cohort.UsageError, "wait_duration"),
    (("t", "x"), {"wait_duration": True}, TypeError, "wait_duration must be an int"),
    (("", "x"), {}, cohort.UsageError, "alert title: must be 1..256 bytes (got 0)"),
    (("t" * 257, "x"), {}, cohort.UsageError, "alert title: must be 1..256 bytes (got 257)"),
    (("t", "x" * ((64 << 10) + 1)), {}, cohort.UsageError, "alert text: must be 0..65536"),
])
def test_bad_arguments_raise_naming_them(args, kwargs, error, message):
    run = cohort.init(mode="disabled")
    with pytest.raises(error) as e:
        run.alert(*args, **kwargs)
    assert message in str(e.value)


def test_module_level_alert_needs_a_run():
    with pytest.raises(cohort.UsageError, match="cohort.alert: no run"):
        cohort.alert("t", "x")
