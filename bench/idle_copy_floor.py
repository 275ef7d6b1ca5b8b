#!/usr/bin/env python3
"""What a 256x256x3 uint8 image costs the training thread after an idle gap, against what a bare
copy of the same array costs then (issue 15: `cohort.Image(a)` p50 after a 20 ms gap): p50 over
--calls calls, each after `time.sleep(--gap)` and back to back, printed as one JSON object.

    python3 bench/idle_copy_floor.py [--gap 0.02] [--calls 150]

numpy alone: `np.copyto` into a preallocated array, `a.copy()`, `a.tobytes()`, a no-op call;
then `cohort.Image(a)` (its checks and its copy). No server: the call's own cost.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))


def p50_us(fn, gap, calls):
    times = []
    for _ in range(calls):
        if gap:
            time.sleep(gap)
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return round(statistics.median(times[calls // 8:]) / 1000, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gap", type=float, default=0.02)
    ap.add_argument("--calls", type=int, default=150)
    args = ap.parse_args()
    import cohort
    a = (np.arange(256 * 256 * 3) % 251).astype(np.uint8).reshape(256, 256, 3)
    dst = np.empty_like(a)
    cases = {"copyto_prealloc": lambda: np.copyto(dst, a), "copy": a.copy,
             "tobytes": a.tobytes, "noop": lambda: None, "cohort_image": lambda: cohort.Image(a)}
    out = {"load_avg_before": os.getloadavg()[0], "gap_s": args.gap}
    for name, fn in cases.items():
        out[name] = {"after_gap_us": p50_us(fn, args.gap, args.calls),
                     "back_to_back_us": p50_us(fn, 0, args.calls)}
    out["load_avg_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
