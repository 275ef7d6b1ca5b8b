"""Reading a run's metric history through the HTTP API, for ``cohort.Api`` runs.

Exact reads page through ``GET .../history`` with the per-series ``after_step`` cursor: one
request asks for up to ``limit`` points of every (key, writer) series of one writer after the
cursor; the rows up to the smallest last step among the series that have more are complete and
are emitted, and that step becomes the next cursor (points past it are asked for again). So a
page holds at most ``page_points`` points whatever the run's size: memory stays flat.

Bucketed reads (``samples=N``) ask the server for N equal step ranges per writer over the
writer's step range, computed from chunk summaries (exact min/max/mean/last per bucket).

Exact reads come as binary columns (api_columns.py, docs/formats.md "History columns") when
numpy is installed, JSON otherwise; the pages, cursor and frames are the same either way.

Single-threaded, like the Transport it uses, except runs_history_frame (Api.history), whose
threads each use a clone of it.
"""
from __future__ import annotations

import bisect
import json
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import api_columns
from .api_http import Transport, list_param, number
from .api_warnings import Skipped
from .errors import UsageError

DEFAULT_PAGE_POINTS = 20_000
# Points per request of history() read as columns: the whole frame is in memory anyway, so a
# page only bounds one answer (24 bytes a point).
COLUMN_PAGE_POINTS = 1_000_000


def use_columns() -> bool:
    """Whether raw history is read as columns (docs/formats.md "History columns"): numpy is
    installed and COHORT_API_COLUMNS is not "0" (which forces JSON, for comparisons)."""
    return os.environ.get("COHORT_API_COLUMNS", "1") != "0" and api_columns.available()
_MAX_INT = 2**63
BUCKET_STATS = ("min", "max", "mean", "last")
# The bucket statistic that a bucketed frame's plain ``<key>`` column holds (what W&B's
# ``history(samples=N)`` has: a value that was logged, at the row's step for a key logged at
# every step), beside the ``<key>.<stat>`` columns.
PLAIN_STAT = "last"


def bucket_columns(key: str) -> List[str]:
    """The columns of `key` in a bucketed frame: the plain key, then one per statistic."""
    return [key] + [f"{key}.{stat}" for stat in BUCKET_STATS]

# One series' page: (key, [[step, time, value], ...]) (values are floats or ints).
SeriesPage = Tuple[str, List[List[Any]]]


def list_series(t: Transport, run_path: str) -> List[Dict[str, Any]]:
    """[{"key", "writer", "type", "count", "min_step", "max_step"}] of every scalar series
    (system included); histogram keys are left out (:func:`list_histogram_keys`)."""
    return [k for k in t.get(run_path + "/keys")["keys"] if k.get("type", "scalar") == "scalar"]


def user_series(t: Transport, run_path: str, keys: Optional[Sequence[str]],
                writers: Optional[Sequence[str]]) -> Dict[str, List[Dict[str, Any]]]:
    """writer -> its series of the selected user keys (system/ only when named), in label order."""
    wanted_keys = set(keys) if keys else None
    wanted_writers = set(writers) if writers else None
    out: Dict[str, List[Dict[str, Any]]] = {}
    for s in list_series(t, run_path):
        if wanted_keys is None and s["key"].startswith("system/"):
            continue
        if wanted_keys is not None and s["key"] not in wanted_keys:
            continue
        if wanted_writers is not None and s["writer"] not in wanted_writers:
            continue
        out.setdefault(s["writer"], []).append(s)
    return dict(sorted(out.items()))


def _check_keys(keys: Optional[Sequence[str]], name: str = "keys") -> Optional[List[str]]:
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    keys = list(keys)
    for k in keys:
        if not isinstance(k, str) or not k:
            raise UsageError(f"{name}: expected non-empty strings, got {k!r}")
    return keys


def _columns_of_json(data: Dict[str, Any]) -> List[api_columns.Columns]:
    """The series of a JSON history answer as columns (a server that answered JSON to a
    request for columns)."""
    import numpy as np

    out = []
    for s in data["series"]:
        pts = s["points"]
        out.append(api_columns.Columns(
            s["key"], s["writer"], bool(s["more"]),
            np.array([p[0] for p in pts], dtype=np.int64),
            np.array([p[1] for p in pts], dtype=np.int64),
            np.array([number(p[2]) for p in pts], dtype=np.float64)))
    return out


def writer_column_pages(t: Transport, run_path: str, writer: str, keys: List[str],
                        page_points: int, min_step: Optional[int] = None,
                        max_step: Optional[int] = None, all_user_keys: bool = False,
                        system: bool = False, skipped: Optional[Skipped] = None
                        ) -> Iterator[List[api_columns.Columns]]:
    """writer_pages read as columns (numpy arrays, docs/formats.md "History columns"): the
    same requests, cursor and cut; each page lists the Columns of every series.
    `system`: read the system route (GET .../system): `writer` is a label, `keys` are named
    without their ``system/`` prefix, as the answer names them. `skipped`: what warns of
    the data the answers left out (api_warnings; one of its own when None)."""
    import numpy as np

    skipped = skipped if skipped is not None else Skipped(run_path)
    limit = max(1, page_points // max(1, len(keys)))
    after: Optional[int] = None
    route, writers = ("/system", "labels") if system else ("/history", "writers")
    while True:
        ctype, body = t.get_raw(run_path + route, {
            "keys": None if all_user_keys else list_param(keys), writers: list_param([writer]),
            "limit": limit, "after_step": after, "min_step": min_step, "max_step": max_step},
            api_columns.ACCEPT)
        if ctype == api_columns.MEDIA_TYPE:
            header, series = api_columns.decode(body)
        else:
            header = json.loads(body)
            series = _columns_of_json(header)
        skipped.note(header)
        del body, header
        series = [s for s in series if s.writer == writer]
        boundary: Optional[int] = None
        for s in series:
            if s.more and len(s.steps):
                last = int(s.steps[-1])
                boundary = last if boundary is None else min(boundary, last)
        page = []
        for s in series:
            if boundary is not None and len(s.steps) and s.steps[-1] > boundary:
                cut = int(np.searchsorted(s.steps, boundary, side="right"))
                s = s._replace(steps=s.steps[:cut], times=s.times[:cut], values=s.values[:cut])
            page.append(s)
        yield page
        if boundary is None:
            return
        after = boundary


def writer_pages(t: Transport, run_path: str, writer: str, keys: List[str], page_points: int,
                 min_step: Optional[int] = None, max_step: Optional[int] = None,
                 all_user_keys: bool = False, skipped: Optional[Skipped] = None
                 ) -> Iterator[List[SeriesPage]]:
    """Pages of one writer's exact history: each page lists the (key, points) of every series,
    cut at a step that every series has passed, so that a page never splits a step.
    `all_user_keys`: `keys` are all the writer's user keys; ask for them without naming them
    (a shorter query). `skipped`: as writer_column_pages'."""
    skipped = skipped if skipped is not None else Skipped(run_path)
    if use_columns():
        for cols in writer_column_pages(t, run_path, writer, keys, page_points, min_step,
                                        max_step, all_user_keys, skipped=skipped):
            yield [(c.key, [list(p) for p in zip(c.steps.tolist(), c.times.tolist(),
                                                  c.values.tolist())]) for c in cols]
        return
    limit = max(1, page_points // max(1, len(keys)))
    after: Optional[int] = None
    while True:
        data = t.get(run_path + "/history", {
            "keys": None if all_user_keys else list_param(keys),
            "writers": list_param([writer]),
            "limit": limit, "after_step": after, "min_step": min_step, "max_step": max_step})
        skipped.note(data)
        series = [s for s in data["series"] if s["writer"] == writer]
        boundary: Optional[int] = None
        for s in series:
            if s["more"] and s["points"]:
                last = s["points"][-1][0]
                boundary = last if boundary is None else min(boundary, last)
        page: List[SeriesPage] = []
        for s in series:
            pts = s.pop("points")
            if boundary is not None and pts and pts[-1][0] > boundary:
                del pts[bisect.bisect_right(pts, [boundary, _MAX_INT, 0.0]):]
            for p in pts:  # values are doubles whatever their JSON spelling ("1" for 1.0)
                p[2] = number(p[2])
            page.append((s["key"], pts))
        del data, series
        yield page
        if boundary is None:
            return
        after = boundary


def page_rows(writer: Optional[str], page: List[SeriesPage]) -> List[Dict[str, Any]]:
    """The rows of one page, by step: {"writer"?, "step", "time", key: value...}."""
    rows: Dict[int, Dict[str, Any]] = {}
    for key, points in page:
        for step, time, value in points:
            row = rows.get(step)
            if row is None:
                row = {"step": step, "time": time} if writer is None else {
                    "writer": writer, "step": step, "time": time}
                rows[step] = row
            row[key] = value
    return [rows[s] for s in sorted(rows)]


def scan_rows(t: Transport, run_path: str, keys: Optional[Sequence[str]],
              writers: Optional[Sequence[str]], page_points: int, with_writer: bool,
              min_step: Optional[int] = None,
              max_step: Optional[int] = None) -> Iterator[Dict[str, Any]]:
    """Every row of the selected writers (in label order), each writer's rows by step."""
    keys = _check_keys(keys)
    writers = _check_keys(writers, "writers")
    if page_points < 1:
        raise UsageError("page_size: expected >= 1")
    skipped = Skipped(run_path)  # one warning per damaged chunk for the whole scan
    for writer, series in user_series(t, run_path, keys, writers).items():
        wkeys = sorted({s["key"] for s in series})
        for page in writer_pages(t, run_path, writer, wkeys, page_points, min_step, max_step,
                                 all_user_keys=keys is None, skipped=skipped):
            yield from page_rows(writer if with_writer else None, page)


# W&B's names of the x axes.
X_AXES = {"_step": "step", "_timestamp": "time"}


def history_frame(t: Transport, run_path: str, keys: Optional[Sequence[str]],
                  writers: Optional[Sequence[str]], samples: Optional[int], x_axis: str,
                  with_writer: bool, page_points: int = DEFAULT_PAGE_POINTS,
                  skipped: Optional[Skipped] = None):
    """A pandas DataFrame of the history (see PublicRun.history). `skipped`: what warns of
    the data the server left out (api_warnings; one of its own, which warns at once, when
    None)."""
    import pandas as pd  # only the DataFrame readers need pandas

    x_axis = X_AXES.get(x_axis, x_axis) if isinstance(x_axis, str) else x_axis
    if x_axis not in ("step", "time"):
        raise UsageError(f"x_axis: expected 'step' or 'time' (or W&B's '_step', "
                         f"'_timestamp'), got {x_axis!r}")
    keys = _check_keys(keys)
    writers = _check_keys(writers, "writers")
    if samples is not None and (not isinstance(samples, int) or samples < 1):
        raise UsageError(f"samples: expected a positive int, got {samples!r}")
    skipped = skipped if skipped is not None else Skipped(run_path)
    frames = []
    selected = user_series(t, run_path, keys, writers)
    for writer, series in selected.items():
        if samples is None:
            frames.append(_exact_writer_frame(pd, t, run_path, writer, series, page_points,
                                              keys is None, skipped))
        else:
            frames.append(_bucketed_writer_frame(pd, t, run_path, writer, series, samples,
                                                 skipped))
    value_cols: List[str] = []
    if samples is None:
        value_cols = sorted({s["key"] for ss in selected.values() for s in ss})
    else:
        for k in sorted({s["key"] for ss in selected.values() for s in ss}):
            value_cols += bucket_columns(k)
    lead = (["writer"] if with_writer else []) + ["step", "time"]
    if not frames:
        return pd.DataFrame(columns=lead + value_cols)
    df = pd.concat(frames, ignore_index=True, sort=False)
    df = df.reindex(columns=["writer", "step", "time"] + value_cols)
    order = [x_axis, "writer"] if with_writer else [x_axis, "writer", "step"]
    if len(frames) == 1:  # one writer: the order by writer is no order
        order = [c for c in order if c != "writer"]
    if not (len(order) <= 2 and all(df[c].is_monotonic_increasing for c in order)):
        df = df.sort_values(order, kind="stable").reset_index(drop=True)  # else: sorted already
    if not with_writer:
        df = df.drop(columns=["writer"])
    df["step"] = df["step"].astype("int64")
    df["time"] = df["time"].astype("int64")
    return df


def _exact_writer_frame(pd, t: Transport, run_path: str, writer: str,
                        series: List[Dict[str, Any]], page_points: int, all_user_keys: bool,
                        skipped: Skipped):
    import numpy as np  # pandas needs it

    keys = sorted({s["key"] for s in series})
    parts = []
    if use_columns():
        arrays: Dict[str, List[api_columns.Columns]] = {k: [] for k in keys}
        for cpage in writer_column_pages(t, run_path, writer, keys,
                                         max(page_points, COLUMN_PAGE_POINTS),
                                         all_user_keys=all_user_keys, skipped=skipped):
            for c in cpage:
                arrays.setdefault(c.key, []).append(c)
        for key, cs in arrays.items():
            parts.append(pd.DataFrame({
                "step": np.concatenate([c.steps for c in cs] or [np.empty(0, np.int64)]),
                "time": np.concatenate([c.times for c in cs] or [np.empty(0, np.int64)]),
                key: np.concatenate([c.values for c in cs] or [np.empty(0, np.float64)])}))
    else:
        cols: Dict[str, Tuple[List[int], List[int], List[float]]] = {
            k: ([], [], []) for k in keys}
        for page in writer_pages(t, run_path, writer, keys, page_points,
                                 all_user_keys=all_user_keys, skipped=skipped):
            for key, points in page:
                steps, times, values = cols[key]
                for step, time, value in points:
                    steps.append(step)
                    times.append(time)
                    values.append(value)
        for key, (steps, times, values) in cols.items():
            # Values are doubles whatever their JSON spelling ("1" for 1.0).
            parts.append(pd.DataFrame({"step": np.asarray(steps, dtype=np.int64),
                                       "time": np.asarray(times, dtype=np.int64),
                                       key: np.asarray(values, dtype=np.float64)}))
    merged = None
    if len(parts) > 1 and all(np.array_equal(p["step"].to_numpy(), parts[0]["step"].to_numpy())
                              for p in parts[1:]):
        # Every key at the same steps (the common case): what the merges below would give
        # (the steps in order, the first key's times), without them.
        merged = parts[0]
        if not merged["step"].is_monotonic_increasing:
            merged = merged.sort_values("step", kind="stable").reset_index(drop=True)
        merged = merged.copy()
        for part in parts[1:]:
            part = part.sort_values("step", kind="stable").reset_index(drop=True)
            merged[part.columns[2]] = part[part.columns[2]].to_numpy()
        parts = []
    for part in parts:
        if merged is None:
            merged = part
        else:
            merged = merged.merge(part, on="step", how="outer", suffixes=("", "_r"))
            merged["time"] = merged["time"].fillna(merged.pop("time_r"))
    if merged is None:
        merged = pd.DataFrame({"step": [], "time": []})
    merged.insert(0, "writer", writer)
    return merged


def _bucketed_writer_frame(pd, t: Transport, run_path: str, writer: str,
                           series: List[Dict[str, Any]], samples: int, skipped: Skipped):
    """One writer's buckets: a row per bucket, the columns of bucket_columns per key."""
    keys = sorted({s["key"] for s in series})
    lo = min(s["min_step"] for s in series)
    hi = max(s["max_step"] for s in series)
    width = 0 if samples <= 1 else (hi - lo) // samples + 1
    data = t.get(run_path + "/history", {"keys": list_param(keys), "writers": list_param([writer]),
                                         "buckets": samples, "min_step": lo, "max_step": hi})
    skipped.note(data)
    rows: Dict[int, Dict[str, Any]] = {}
    for s in data["series"]:
        if s["writer"] != writer:
            continue
        for b in s["buckets"]:
            idx = 0 if width == 0 else (b["step_min"] - lo) // width
            row = rows.setdefault(idx, {"writer": writer, "step": b["step_max"],
                                        "time": b["time_max"]})
            row["step"] = max(row["step"], b["step_max"])
            row["time"] = max(row["time"], b["time_max"])
            for stat in BUCKET_STATS:
                # null: a bucket without a finite value (min, max, mean), or whose values hold
                # an infinity (mean; docs/api.md "History"): NaN, a gap.
                v = b.get(stat)
                row[f"{s['key']}.{stat}"] = float("nan") if v is None else number(v)
            row[s["key"]] = row[f"{s['key']}.{PLAIN_STAT}"]
    return pd.DataFrame([rows[i] for i in sorted(rows)],
                        columns=["writer", "step", "time"]
                        + [c for k in keys for c in bucket_columns(k)])


def system_frame(t: Transport, run_path: str, labels: Optional[Sequence[str]],
                 keys: Optional[Sequence[str]], samples: Optional[int]):
    """System metrics as a DataFrame: one row per (label, time), a column per metric (without
    the ``system/`` prefix); bucketed like history when `samples` is given."""
    import pandas as pd

    labels = _check_keys(labels, "labels")
    keys = _check_keys(keys)
    if samples is not None and (not isinstance(samples, int) or samples < 1):
        raise UsageError(f"samples: expected a positive int, got {samples!r}")
    sys_keys = [f"system/{k}" for k in keys] if keys else None
    if sys_keys is None:
        sys_keys = sorted({s["key"] for s in list_series(t, run_path)
                           if s["key"].startswith("system/")})
    if not sys_keys:
        return pd.DataFrame(columns=["label", "time"])
    per_label = user_series(t, run_path, sys_keys, labels)
    skipped = Skipped(run_path)
    if samples is None and use_columns():
        return _system_columns_frame(pd, t, run_path, per_label, skipped)
    rows: List[Dict[str, Any]] = []
    for label, series in per_label.items():
        names = sorted({s["key"] for s in series})
        if samples is None:
            by_step: Dict[int, Dict[str, Any]] = {}
            for page in writer_pages(t, run_path, label, names, DEFAULT_PAGE_POINTS,
                                     skipped=skipped):
                for key, points in page:
                    for step, time, value in points:
                        row = by_step.setdefault(step, {"label": label, "time": time})
                        row[key[len("system/"):]] = value
            rows += [by_step[s] for s in sorted(by_step)]
        else:
            frame = _bucketed_writer_frame(pd, t, run_path, label, series, samples, skipped)
            frame = frame.rename(columns={"writer": "label"}).drop(columns=["step"])
            frame.columns = [c[len("system/"):] if c.startswith("system/") else c
                             for c in frame.columns]
            rows += frame.to_dict("records")
    if not rows:
        return pd.DataFrame(columns=["label", "time"])
    df = pd.DataFrame(rows)
    return df.sort_values(["time", "label"], kind="stable").reset_index(drop=True)


def _system_columns_frame(pd, t: Transport, run_path: str,
                          per_label: Dict[str, List[Dict[str, Any]]], skipped: Skipped):
    """system_frame's exact read as columns from GET .../system (docs/formats.md "History
    columns"): the same frame as the JSON rows give (a row per (label, step) with the time of
    its first key, columns in the order the rows first name them)."""
    import numpy as np

    frames = []
    order: List[str] = []  # the metric columns in the order the JSON rows first name them
    for label, series in per_label.items():
        names = sorted({s["key"][len("system/"):] for s in series})
        arrays: Dict[str, List[api_columns.Columns]] = {}
        for cpage in writer_column_pages(t, run_path, label, names, COLUMN_PAGE_POINTS,
                                         system=True, skipped=skipped):
            for c in cpage:
                arrays.setdefault(c.key, []).append(c)
        if not arrays:
            continue
        # Per key: (steps, times, values) of the whole read, in the answer's key order (the
        # order the JSON rows meet the keys within a step).
        cols = {k: tuple(np.concatenate([getattr(c, f) for c in cs]) for f in
                         ("steps", "times", "values")) for k, cs in arrays.items()}
        steps = np.unique(np.concatenate([v[0] for v in cols.values()]))
        if not len(steps):
            continue
        frame = {"label": np.full(len(steps), label, dtype=object)}
        time = np.zeros(len(steps), dtype=np.int64)
        timed = np.zeros(len(steps), dtype=bool)
        first_at = []
        for i, (k, (ks, kt, kv)) in enumerate(cols.items()):
            at = np.searchsorted(steps, ks)
            fresh = ~timed[at]
            time[at[fresh]] = kt[fresh]
            timed[at] = True
            value = np.full(len(steps), np.nan)
            value[at] = kv
            frame[k] = value
            if len(ks):
                first_at.append((int(at[0]), i, k))
        frame["time"] = time
        for _, _, k in sorted(first_at):
            if k not in order:
                order.append(k)
        frames.append(pd.DataFrame(frame))
    if not frames:
        return pd.DataFrame(columns=["label", "time"])
    df = pd.concat(frames, ignore_index=True, sort=False)
    df = df.reindex(columns=["label", "time"] + order)
    return df.sort_values(["time", "label"], kind="stable").reset_index(drop=True)


# -- histograms (GET .../{run}/histograms, docs/api.md "Histograms") ----------------------------
def list_histogram_keys(t: Transport, run_path: str) -> List[Dict[str, Any]]:
    """[{"key", "writer", "type", "count", "min_step", "max_step"}] of every histogram key."""
    return [k for k in t.get(run_path + "/keys")["keys"] if k.get("type") == "histogram"]


def _edges(step: Dict[str, Any], shared: Optional[List[float]]) -> List[float]:
    if "edges" in step:
        return step["edges"]
    if shared is not None:  # the edges every step of the series has, sent once
        return list(shared)
    lo, hi, n = step["lo"], step["hi"], len(step["counts"])
    return [lo + (hi - lo) * i / n for i in range(n)] + [hi]


def histogram_frame(t: Transport, run_path: str, key: Union[str, Sequence[str]],
                    writers: Optional[Sequence[str]], min_step: Optional[int],
                    max_step: Optional[int], samples: Optional[int]):
    """A pandas DataFrame of histograms (see PublicRun.histograms)."""
    import pandas as pd  # only the DataFrame readers need pandas
    keys = _check_keys(key)
    if not keys:
        raise UsageError("histograms: name at least one key")
    writers = _check_keys(writers, "writers")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int)
                                or samples < 1):
        raise UsageError(f"samples: expected an int >= 1, got {samples!r}")
    data = t.get(run_path + "/histograms", {
        "keys": list_param(keys), "writers": list_param(writers) if writers else None,
        "min_step": min_step, "max_step": max_step, "buckets": samples})
    Skipped(run_path).note(data)
    rows: List[Dict[str, Any]] = []
    for h in data["histograms"]:
        for s in h["steps"]:
            row = {"key": h["key"], "writer": h["writer"], "step": s["step"],
                   "time": s["time_ms"], "edges": _edges(s, h.get("edges")),
                   "counts": s["counts"]}
            if samples is not None:
                row["last_step"] = s.get("last_step", s["step"])
                row["merged"] = s.get("merged", 1)
                row["exact"] = s.get("exact", True)
            rows.append(row)
    columns = ["key", "writer", "step", "time", "edges", "counts"]
    if samples is not None:
        columns += ["last_step", "merged", "exact"]
    return pd.DataFrame(rows, columns=columns)


# -- many runs at once (Api.history) ------------------------------------------------------------
def runs_history_frame(t: Transport, runs: List[Tuple[str, str]], keys: Optional[Sequence[str]],
                       writers: Optional[Sequence[str]], max_workers: int):
    """One long DataFrame of the exact history of `runs` ([(run id, API path)]): columns
    ``run``, ``writer``, ``step``, ``time`` and one per key, runs in the given order, each as
    history_frame orders it. Runs are read by up to `max_workers` threads, each with its own
    connection (a clone of `t`)."""
    import concurrent.futures
    import threading

    import pandas as pd

    keys = _check_keys(keys)
    if not isinstance(max_workers, int) or isinstance(max_workers, bool) or max_workers < 1:
        raise UsageError(f"max_workers: expected an int >= 1, got {max_workers!r}")
    local = threading.local()
    transports: List[Transport] = []
    lock = threading.Lock()

    # Warnings of left-out data are collected on the threads and emitted here, in run order,
    # where they can point at the caller's line.
    skipped = [Skipped(path, emit=False) for _, path in runs]

    def one(i: int):
        tt = getattr(local, "t", None)
        if tt is None:
            tt = local.t = t.clone()
            with lock:
                transports.append(tt)
        return history_frame(tt, runs[i][1], keys, writers, None, "step", True,
                             skipped=skipped[i])

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, min(max_workers, len(runs)))) as ex:
            frames = list(ex.map(one, range(len(runs))))
    finally:
        for tt in transports:
            tt.close()
    for s in skipped:
        s.flush()
    value_cols = sorted({c for f in frames for c in f.columns} - {"writer", "step", "time"})
    columns = ["run", "writer", "step", "time"] + value_cols
    ids = [r[0] for r, f in zip(runs, frames) if len(f)]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=columns)
    # Column by column (what pd.concat + reindex would give, without its block copies).
    import numpy as np

    data: Dict[str, Any] = {"run": np.repeat(np.array(ids, dtype=object),
                                             [len(f) for f in frames])}
    for c in columns[1:]:
        if c == "writer":
            data[c] = np.concatenate([f[c].to_numpy(dtype=object) for f in frames])
        elif c in ("step", "time"):
            data[c] = np.concatenate([f[c].to_numpy(dtype=np.int64) for f in frames])
        else:
            data[c] = np.concatenate([f[c].to_numpy(dtype=np.float64) if c in f
                                      else np.full(len(f), np.nan) for f in frames])
    return pd.DataFrame(data, columns=columns)
