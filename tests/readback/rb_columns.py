"""Helpers of the suites that compare the columnar answers (docs/formats.md "History columns")
with the JSON ones: a raw GET with an Accept header, JSON's spelling of special doubles, the
bits of a double, and "two DataFrames are the same to the bit"."""
import math
import struct
import urllib.error
import urllib.request

import rb_data  # noqa: F401  (first: puts the SDK on sys.path)

import cohort  # noqa: E402

COLUMNS = "application/vnd.cohort.columns"


def json_value(v):
    """`v` as the ingest JSON writes it: NaN and the infinities as strings."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def get(data, path, accept=None):
    """(status, Content-Type, body) of GET data["url"] + path with data["key"]."""
    req = urllib.request.Request(data["url"] + path)
    req.add_header("Authorization", "Bearer " + data["key"])
    if accept is not None:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def bits(v):
    return struct.pack("<d", v)


def json_bits(v):
    """The bits of a value of a JSON answer ("NaN", "Infinity" or a number)."""
    return bits(cohort.api_http.number(v))


def assert_same_frames(a, b):
    """Equal frames, columns and dtypes, and float columns equal to the bit (NaN where NaN,
    -0.0 where -0.0)."""
    import numpy as np
    import pandas as pd

    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert list(a.columns) == list(b.columns) and list(a.dtypes) == list(b.dtypes)
    for c in a.columns:
        if a[c].dtype == np.float64:
            assert a[c].to_numpy().tobytes() == b[c].to_numpy().tobytes(), c
