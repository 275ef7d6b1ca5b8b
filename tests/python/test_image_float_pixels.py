"""cohort.Image of float pixels outside [0, 1] (no server): 0..255 floats are pixel values, cast
as wandb 0.31's wandb.Image casts them (compared with the real wandb in the environment), -1..1
and other ranges with negatives are stretched from min..max, and what is still refused (NaN,
above 255, integers outside 0..255) says what to pass instead."""
import io

import numpy as np
import pytest

import sdk_helpers  # noqa: F401  (puts the package on sys.path)
import cohort

PILImage = pytest.importorskip("PIL.Image", reason="cohort.Image encodes arrays with Pillow")


def _pixels(data):
    with PILImage.open(io.BytesIO(data)) as im:
        return np.asarray(im)


def test_float_pixels_in_0_255_are_stored_as_wandb_stores_them():
    wandb = pytest.importorskip("wandb")
    rng = np.random.default_rng(3)
    for arr in (rng.random((6, 7, 3)) * 255, (rng.random((6, 7)) * 200 + 2).astype(np.float32),
                np.full((3, 4, 3), 254.9)):
        got = _pixels(cohort.Image(arr)._encode()[0])
        want = np.asarray(wandb.Image(arr).image)
        assert got.dtype == np.uint8 and np.array_equal(got, want), (got, want)
        assert np.array_equal(got, arr.astype(np.uint8))


def test_float_pixels_in_0_1_are_still_scaled_by_255():
    arr = np.array([[0.0, 0.5, 1.0]])
    assert np.array_equal(_pixels(cohort.Image(arr)._encode()[0]), [[0, 128, 255]])


def test_float_pixels_with_negatives_are_stretched_from_min_to_max():
    arr = np.array([[-1.0, 0.0, 1.0]], dtype=np.float32)
    assert np.array_equal(_pixels(cohort.Image(arr)._encode()[0]), [[0, 128, 255]])
    wide = np.array([[-10.0, 290.0]])
    assert np.array_equal(_pixels(cohort.Image(wide)._encode()[0]), [[0, 255]])
    flat = np.full((2, 2), -3.0)
    assert np.array_equal(_pixels(cohort.Image(flat)._encode()[0]), np.zeros((2, 2)))


def test_what_is_still_refused_says_what_to_do():
    with pytest.raises(ValueError) as e:
        cohort.Image(np.full((2, 2), 300.0))
    assert "got 300..300" in str(e.value)
    assert "np.clip(arr, 0, 255).astype(np.uint8)" in str(e.value)
    with pytest.raises(ValueError, match=r"np\.nan_to_num"):
        cohort.Image(np.array([[np.inf, 1.0]]))
    with pytest.raises(ValueError) as e:
        cohort.Image(np.array([[70000]], dtype=np.int64))
    assert "arr.astype(np.uint8)" in str(e.value) and "0..70000" in str(e.value)
