"""Value conversion of run.log: what is accepted, how dicts flatten, and the errors that name
the offending key. `_cohort._flatten` is the conversion run.log does, returned as a list."""
import decimal
import fractions
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import sdk_helpers
import cohort
from cohort import _values
from cohort._native import native


def flat(d):
    try:
        return dict(native._flatten(d))
    finally:
        _values.texts.clear()  # str values met outside run.log: no run keeps them


@pytest.fixture
def run():
    r = cohort.init(mode="disabled", reinit="create_new")
    yield r
    r.finish()


def test_python_scalars_become_floats():
    assert flat({"i": 3, "f": 0.5, "t": True, "n": False}) == {"i": 3.0, "f": 0.5, "t": 1.0,
                                                                "n": 0.0}


def test_non_finite_floats_pass_through():
    out = flat({"nan": float("nan"), "inf": float("inf")})
    assert np.isnan(out["nan"]) and out["inf"] == float("inf")


def test_nested_dicts_flatten_with_slash():
    assert flat({"train": {"loss": 1, "acc": {"top1": 0.5}}, "lr": 0.1}) == {
        "train/loss": 1.0, "train/acc/top1": 0.5, "lr": 0.1}


def test_empty_nested_dict_logs_nothing():
    assert flat({"a": {}}) == {}


def test_numpy_scalars_and_zero_d_arrays():
    out = flat({"f32": np.float32(0.25), "i64": np.int64(7), "u8": np.uint8(3),
                "b": np.bool_(True), "f64": np.float64(1.5), "arr0": np.array(2.5)})
    assert out == {"f32": 0.25, "i64": 7.0, "u8": 3.0, "b": 1.0, "f64": 1.5, "arr0": 2.5}


def test_zero_d_torch_tensors():
    import torch
    x = torch.tensor(2.0, requires_grad=True)
    out = flat({"t": torch.tensor(0.5), "grad": x * 2, "i": torch.tensor(3),
                "b": torch.tensor(True)})
    assert out == {"t": 0.5, "grad": 4.0, "i": 3.0, "b": 1.0}


def test_other_real_numbers_are_accepted():
    assert flat({"q": fractions.Fraction(1, 4)}) == {"q": 0.25}


def test_non_dict_mapping_values_flatten():
    assert flat({"m": types.MappingProxyType({"x": 1})}) == {"m/x": 1.0}


@pytest.fixture
def fresh_warnings():
    """Forgets the keys already warned about (one warning per key and process)."""
    _values._warned.clear()
    yield
    _values._warned.clear()


def test_str_and_none_values_are_skipped_with_one_warning_per_key(fresh_warnings):
    data = {"train": {"name": "resnet", "loss": 0.5}, "nothing": None, "acc": 1}
    with pytest.warns(RuntimeWarning) as caught:
        assert flat(data) == {"train/loss": 0.5, "acc": 1.0}  # the rest of the call is logged
    texts = sorted(str(w.message) for w in caught)
    assert len(texts) == 2, texts
    assert "'nothing': None is not stored as a metric" in texts[0]
    assert "'train/name': a str is not stored as a chart series" in texts[1]
    assert "kept in the run's summary (run.summary['train/name'])" in texts[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same keys again: no second warning
        assert flat(data) == {"train/loss": 0.5, "acc": 1.0}


def test_a_str_value_through_run_log_does_not_raise(run, fresh_warnings):
    with pytest.warns(RuntimeWarning, match="'label': a str is not stored as a chart series"):
        run.log({"loss": 0.5, "label": "cat"})


def test_a_list_of_non_numbers_is_a_type_error_naming_the_key():
    with pytest.raises(TypeError, match=r"'hist'.*list holding str"):
        flat({"hist": [1, "2", 3]})


def test_one_element_arrays_and_tensors_are_scalars():
    import torch
    out = flat({"np1": np.array([2.5]), "np11": np.full((1, 1), 3, dtype=np.int64),
                "npb": np.array([True]), "npf32": np.array([0.25], dtype=np.float32),
                "t1": torch.tensor([1.5]), "t11": torch.ones(1, 1, dtype=torch.int64),
                "tg": (torch.ones(1, requires_grad=True) * 4)})
    assert out == {"np1": 2.5, "np11": 3.0, "npb": 1.0, "npf32": 0.25, "t1": 1.5, "t11": 1.0,
                   "tg": 4.0}


def test_numpy_and_torch_ints_beyond_2_53_warn_once_per_key(fresh_warnings):
    import torch
    big = 2 ** 53 + 1
    with pytest.warns(RuntimeWarning) as caught:
        out = flat({"np": np.int64(big), "t": torch.tensor([big]), "exact": np.int64(2 ** 53),
                    "u": np.uint64(2 ** 64 - 1)})
    assert out == {"np": float(big), "t": float(big), "exact": 2.0 ** 53, "u": 2.0 ** 64}
    texts = sorted(str(w.message) for w in caught)
    assert len(texts) == 3, texts
    assert "'np': the int 9007199254740993 is not exactly representable" in texts[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat({"np": np.int64(big)})


def test_the_converter_warns_for_an_int_a_double_rounds(fresh_warnings):
    with pytest.warns(RuntimeWarning, match="'k': the int 9007199254740993"):
        assert _values.convert("k", 2 ** 53 + 1) == 2.0 ** 53


def test_python_ints_beyond_2_53_warn_once_per_key(fresh_warnings):
    # The extension reads ints itself; past 2^53 it hands them to the converter, which warns
    # when the double rounds them (they were rounded without a word).
    with pytest.warns(RuntimeWarning) as caught:
        out = flat({"big": 2 ** 53 + 1, "exact": 2 ** 60, "small": 7, "neg": -(2 ** 53) - 1})
    assert out == {"big": 2.0 ** 53, "exact": 2.0 ** 60, "small": 7.0, "neg": -(2.0 ** 53)}
    texts = sorted(str(w.message) for w in caught)
    assert len(texts) == 2, texts
    assert "'big': the int 9007199254740993 is not exactly" in texts[0], texts
    assert "'neg': the int -9007199254740993 is not exactly" in texts[1], texts


def test_decimals_are_logged_as_floats():
    out = flat({"d": decimal.Decimal("0.1"), "n": decimal.Decimal("-3")})
    assert out == {"d": 0.1, "n": -3.0}


def test_non_numeric_numpy_array_is_a_type_error_with_its_shape():
    with pytest.raises(TypeError, match=r"'w'.*shape \(3,\).*dtype <U1"):
        flat({"w": np.array(["a", "b", "c"])})


def test_complex_numpy_scalar_is_a_type_error():
    with pytest.raises(TypeError, match=r"'c'"):
        flat({"c": np.complex64(1 + 2j)})


def test_complex_tensor_is_a_type_error_with_its_shape():
    import torch
    with pytest.raises(TypeError, match=r"'t'.*shape \(2, 2\).*complex"):
        flat({"t": torch.zeros(2, 2, dtype=torch.complex64)})


def test_non_str_key_is_a_type_error():
    with pytest.raises(TypeError, match="keys must be str"):
        flat({1: 2.0})


def test_empty_key_is_a_value_error():
    with pytest.raises(ValueError, match="empty"):
        flat({"": 1.0})


def test_key_over_256_bytes_is_a_value_error():
    with pytest.raises(ValueError, match="256"):
        flat({"k" * 257: 1.0})


def test_int_too_large_for_a_float_is_an_overflow_error_naming_the_key():
    with pytest.raises(OverflowError, match="'big'"):
        flat({"big": 10 ** 400})


def test_log_rejects_a_non_dict(run):
    with pytest.raises(TypeError, match="dict"):
        run.log([("a", 1)])
    with pytest.raises(TypeError, match="dict"):
        run.log(None)


def test_log_accepts_a_mapping(run):
    run.log(types.MappingProxyType({"a": 1}))


def test_log_step_must_be_a_non_negative_int(run):
    run.log({"a": 1}, step=np.int64(3))
    with pytest.raises(TypeError, match="step"):
        run.log({"a": 1}, step=1.5)
    with pytest.raises(TypeError, match="step"):
        run.log({"a": 1}, step=True)
    with pytest.raises(ValueError, match="step"):
        run.log({"a": 1}, step=-1)


def test_log_error_names_key_through_run_log(run):
    with pytest.raises(TypeError, match=r"'metrics/bad'"):
        run.log({"ok": 1.0, "metrics": {"bad": object()}})


def test_cohort_imports_neither_torch_nor_numpy():
    code = ("import sys, sdk_helpers, cohort\n"
            "r = cohort.init(mode='disabled')\n"
            "r.log({'a': 1, 'b': {'c': 2.5}})\n"
            "r.finish()\n"
            "print('torch' in sys.modules, 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code],
                         cwd=str(sdk_helpers.ROOT / "tests" / "python"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
