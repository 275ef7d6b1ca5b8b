"""Values the vendor SDK's run.log accepts (its wandb/util.py json_friendly and
maybe_compress_history): lists, tuples, numpy arrays and torch tensors of numbers (one element:
that number; several: a histogram), empty ones (skipped), pandas DataFrames (a table), datetimes
and str values (no series; the last str value of a key kept in the run's summary). In disabled
mode and through the extension's own conversion (`_cohort._flatten`); test_wandb_compat_server.py
reads them back from a real server."""
import datetime
import warnings

import numpy as np
import pytest

import sdk_helpers  # noqa: F401  (makes `cohort` importable)
import cohort
from cohort import _values
from cohort._native import native


@pytest.fixture(autouse=True)
def fresh():
    cohort.teardown()
    _values._warned.clear()
    _values.texts.clear()
    yield
    cohort.teardown()
    _values._warned.clear()
    _values.texts.clear()


def flat(d):
    try:
        return dict(native._flatten(d))
    finally:
        _values.texts.clear()


def hist(bins, lo, hi):
    return ("histogram", bins, lo, hi)


def test_lists_and_tuples_of_numbers_are_histograms():
    out = flat({"l": [1, 2, 3], "t": (0.5, 1.5), "nested": [[1, 2], [3, 4]],
                "mixed": [1, np.float32(2.5), True]})
    assert out["l"] == hist(_values.SEQUENCE_BINS, 1.0, 3.0)
    assert out["t"] == hist(32, 0.5, 1.5)
    assert out["nested"] == hist(32, 1.0, 4.0)
    assert out["mixed"] == hist(32, 1.0, 2.5)


def test_a_list_of_numbers_through_run_log_is_logged_with_the_calls_scalars():
    run = cohort.init(mode="disabled")
    run.log({"loss": 0.5, "hist": [1, 2, 3]})  # raised TypeError (and dropped the loss) before


def test_sequences_of_one_element_are_scalars():
    import torch
    out = flat({"l": [2.5], "t": (3,), "nested": [[7]], "np": np.array([[1.5]]),
                "tensor": torch.tensor([4.0])})
    assert out == {"l": 2.5, "t": 3.0, "nested": 7.0, "np": 1.5, "tensor": 4.0}


def test_numpy_arrays_and_tensors_of_several_elements_are_histograms():
    import torch
    out = flat({"np": np.arange(100).reshape(10, 10), "b": np.array([True, False]),
                "t": torch.arange(40, dtype=torch.float32), "g": torch.ones(3, requires_grad=True)})
    assert out["np"] == hist(32, 0.0, 99.0)
    assert out["b"] == hist(32, 0.0, 1.0)
    assert out["t"] == hist(32, 0.0, 39.0)
    assert out["g"][:2] == ("histogram", 32)


def test_empty_sequences_are_skipped_with_one_warning_per_key():
    import torch
    with pytest.warns(RuntimeWarning) as caught:
        out = flat({"l": [], "t": (), "np": np.zeros((0, 3)), "tensor": torch.zeros(0), "x": 1})
    assert out == {"x": 1.0}
    texts = sorted(str(w.message) for w in caught)
    assert len(texts) == 4, texts
    assert "key 'l': an empty list holds no value (the key is skipped" in texts[0]
    assert "key 'np': an empty numpy.ndarray of shape (0, 3) holds no value" in texts[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat({"l": []})  # once per key


def test_non_numeric_sequences_raise_naming_the_key_and_log_nothing():
    run = cohort.init(mode="disabled")
    for bad, match in ((["a", "b"], r"'bad': cannot log a list holding str \('a'\)"),
                       ([1, None], r"'bad': cannot log a list holding NoneType"),
                       ([{"a": 1}], r"'bad': cannot log a list holding dict"),
                       ((1, object()), r"'bad': cannot log a tuple holding object"),
                       (np.array(["x", "y"]), r"'bad': cannot log a numpy.ndarray .*dtype <U1")):
        with pytest.raises(TypeError, match=match):
            run.log({"phase": "train", "ok": 1.0, "bad": bad})
    assert "phase" not in run.summary  # a call that raises keeps nothing, its str included


def test_a_pandas_dataframe_is_a_table():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    mset = _values.convert("preds", df)
    assert mset._cohort_media_type == "table"
    (table,) = mset.items
    assert isinstance(table, cohort.Table)
    assert table.columns == ["a", "b"] and table.data == [[1, "x"], [2, "y"]]
    run = cohort.init(mode="disabled")
    run.log({"preds": df, "loss": 0.1})


def test_a_dataframe_that_cannot_be_a_table_raises_naming_the_key():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [{"nested": 1}]})
    with pytest.raises(ValueError, match=r"log: key 'preds': cannot log this pandas.DataFrame"):
        _values.convert("preds", df)


def test_datetimes_are_kept_in_the_summary_as_iso_text():
    run = cohort.init(mode="disabled")
    when = datetime.datetime(2024, 5, 1, 12, 30)
    with pytest.warns(RuntimeWarning, match=r"'at': a datetime.datetime is not stored as a chart "
                                            r"series; the last value logged is kept in the run's "
                                            r"summary"):
        run.log({"at": when, "day": datetime.date(2024, 5, 2), "x": 1})
    assert run.summary["at"] == "2024-05-01T12:30:00"
    assert run.summary["day"] == "2024-05-02"


def test_the_last_str_value_of_a_key_is_kept_in_the_summary():
    run = cohort.init(mode="disabled")
    with pytest.warns(RuntimeWarning, match=r"'phase': a str is not stored as a chart series; "
                                            r"the last value logged is kept in the run's summary "
                                            r"\(run.summary\['phase'\]\)"):
        run.log({"phase": "warmup", "loss": 1.0})
    assert run.summary["phase"] == "warmup"
    run.log({"phase": "train", "sub": {"name": "resnet"}})
    assert run.summary["phase"] == "train" and run.summary["sub/name"] == "resnet"
    cohort.log({"phase": "eval"})  # the module-level call too
    assert cohort.summary["phase"] == "eval"
    assert not _values.texts  # nothing left behind


def test_a_str_is_kept_in_the_summary_of_the_run_that_logged_it():
    first = cohort.init(mode="disabled")
    second = cohort.init(mode="disabled", reinit="create_new")
    second.log({"phase": "two"})
    first.log({"phase": "one"})
    assert (first.summary["phase"], second.summary["phase"]) == ("one", "two")


def test_a_str_met_outside_run_log_does_not_reach_the_next_call():
    run = cohort.init(mode="disabled")
    with pytest.warns(RuntimeWarning):
        native._flatten({"stray": "x"})  # the extension's conversion without a run
    run.log({"a": 1.0})
    assert "stray" not in run.summary


def test_a_str_logged_at_every_step_is_sent_when_it_changes_at_most_every_10_s(monkeypatch):
    # Each run.log holding a str sent a summary update (a PATCH on the server per call).
    from cohort import _run
    run = cohort.init(mode="disabled")
    sent = []
    real = run._summary.update
    object.__setattr__(run._summary, "update",
                       lambda changes, *a, **k: (sent.append(dict(changes)), real(changes)))
    clock = [1000.0]
    monkeypatch.setattr(_run, "_clock", lambda: clock[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(100):
            run.log({"phase": "train", "loss": 1.0})
        assert sent == [{"phase": "train"}]  # the first at once, the same value never again
        run.log({"phase": "eval"})  # changed within 10 s: read at once, sent later
        assert run.summary["phase"] == "eval" and len(sent) == 1
        clock[0] += 11
        run.log({"phase": "eval"})
        assert sent == [{"phase": "train"}, {"phase": "eval"}]
        run.log({"phase": "test"})
        assert len(sent) == 2
    run.finish()  # what is kept goes at finish
    assert sent[-1] == {"phase": "test"}
