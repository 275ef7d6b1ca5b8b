"""Export of a run's exact history to CSV, JSON Lines or Parquet, streamed page by page (memory
stays flat), written to ``<path>.part`` and renamed at the end so that a failed export leaves no
partial file. ``python -m cohort export RUN --format parquet`` runs it from a shell; the
``cohort runs export`` binary writes the same files, Parquet without pyarrow (docs/cli.md).

Columns: ``writer``, ``step``, ``time`` (ms since the epoch; in Parquet a UTC millisecond
timestamp), then one per key in name order;
a key not logged at a row's step is empty (CSV), absent (JSONL) or null (Parquet). Non-finite
values are written ``NaN`` / ``Infinity`` / ``-Infinity`` in CSV and JSONL (as in the HTTP API).

Parquet needs ``pyarrow`` (``pip install pyarrow``); without it the export raises UsageError.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import api_history
from .api_http import split_list_param
from .errors import Error, UsageError

FORMATS = ("csv", "jsonl", "parquet")
ROW_GROUP = 50_000


def _text(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def _json_value(v: float) -> Any:
    return _text(v) if not math.isfinite(v) else v


def export_run(run: Any, path: str, fmt: str = "csv", keys: Optional[Sequence[str]] = None,
               writers: Optional[Sequence[str]] = None,
               progress: Optional[Callable[[int, int], None]] = None) -> int:
    """Writes `run`'s (a PublicRun) history to `path`; returns the number of rows written.
    `progress(points_done, points_total)` is called after each page."""
    if fmt not in FORMATS:
        raise UsageError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as e:
            raise UsageError(f"parquet export needs pyarrow ({e}): pip install pyarrow "
                             "(or export with format='csv' / 'jsonl')") from e
    t = run._api._t
    selected = api_history.user_series(t, run._base, keys, writers)
    all_keys = sorted({s["key"] for ss in selected.values() for s in ss})
    total = sum(s["count"] for ss in selected.values() for s in ss)
    tmp = path + ".part"
    rows = 0
    done = 0
    try:
        if fmt == "parquet":
            fields = [pa.field("writer", pa.string()), pa.field("step", pa.int64()),
                      pa.field("time", pa.timestamp("ms", tz="UTC"))]
            fields += [pa.field(k, pa.float64()) for k in all_keys]
            schema = pa.schema(fields)
            with pq.ParquetWriter(tmp, schema) as w:
                batch: Dict[str, List[Any]] = {f.name: [] for f in fields}
                for writer, series in selected.items():
                    wkeys = sorted({s["key"] for s in series})
                    for page in api_history.writer_pages(t, run._base, writer, wkeys,
                                                         api_history.DEFAULT_PAGE_POINTS,
                                                         all_user_keys=keys is None):
                        for row in api_history.page_rows(writer, page):
                            for name in batch:
                                batch[name].append(row.get(name))
                            rows += 1
                        done += sum(len(p) for _, p in page)
                        if len(batch["step"]) >= ROW_GROUP:
                            w.write_table(pa.Table.from_pydict(batch, schema=schema))
                            batch = {f.name: [] for f in fields}
                        if progress:
                            progress(done, total)
                if batch["step"] or rows == 0:
                    w.write_table(pa.Table.from_pydict(batch, schema=schema))
        else:
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                out = csv.writer(f, lineterminator="\n") if fmt == "csv" else None
                if out:
                    out.writerow(["writer", "step", "time"] + all_keys)
                for writer, series in selected.items():
                    wkeys = sorted({s["key"] for s in series})
                    for page in api_history.writer_pages(t, run._base, writer, wkeys,
                                                         api_history.DEFAULT_PAGE_POINTS,
                                                         all_user_keys=keys is None):
                        for row in api_history.page_rows(writer, page):
                            if out:
                                out.writerow([writer, row["step"], row["time"]] + [
                                    _text(row[k]) if k in row else "" for k in all_keys])
                            else:
                                rec = {"writer": writer, "step": row["step"],
                                       "time": row["time"]}
                                for k in all_keys:
                                    if k in row:
                                        rec[k] = _json_value(row[k])
                                f.write(json.dumps(rec, allow_nan=False) + "\n")
                            rows += 1
                        done += sum(len(p) for _, p in page)
                        if progress:
                            progress(done, total)
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return rows


def _bar(stream: Any) -> Callable[[int, int], None]:
    def draw(done: int, total: int) -> None:
        pct = 100 if total <= 0 else min(100, done * 100 // total)
        filled = pct * 30 // 100
        stream.write(f"\rexporting [{'#' * filled}{' ' * (30 - filled)}] {pct:3d}% "
                     f"{done}/{total} points")
        stream.flush()
    return draw


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m cohort export RUN [--format csv|jsonl|parquet] [-o FILE]``."""
    from . import __version__
    from .api import Api

    parser = argparse.ArgumentParser(prog="python -m cohort")
    # The project version (CMakeLists.txt), as `cohort --version` prints it.
    parser.add_argument("--version", action="version", version=f"cohort {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="export a run's history (csv, jsonl, parquet)")
    ex.add_argument("run", help="entity/project/run_id or project/run_id")
    ex.add_argument("-f", "--format", default="parquet", choices=FORMATS)
    ex.add_argument("-o", "--output", help="output file (default <run_id>.<format>)")
    ex.add_argument("-k", "--keys",
                    help="only these keys (comma-separated; \\, for a comma in a key)")
    ex.add_argument("-w", "--writers",
                    help="only these writers (comma-separated; \\, for a comma in a label)")
    ex.add_argument("--progress", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)
    try:
        api = Api()
        run = api.run(args.run)
        path = args.output or f"{run.id}.{args.format}"
        show = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
        rows = export_run(run, path, args.format,
                          keys=split_list_param(args.keys) if args.keys else None,
                          writers=split_list_param(args.writers) if args.writers else None,
                          progress=_bar(sys.stderr) if show else None)
        if show:
            sys.stderr.write("\n")
        sys.stderr.write(f"exported {rows} rows to {path}\n")
        return 0
    except Error as e:
        sys.stderr.write(f"python -m cohort export: {e}\n")
        return 2 if isinstance(e, UsageError) else 1
