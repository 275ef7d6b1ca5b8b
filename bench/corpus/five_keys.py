"""Issue 22's own reproduction as a corpus file: 1M points of five everyday keys, one writer.

200,000 steps logged every ~100 ms (95-105 ms apart), each with five keys: `train/loss` (a
decaying curve with noise, float32), `train/grad_norm` (noise around 1, float32), `val/acc`
(rounded to 3 decimals), `lr` (a step schedule: 1e-3, 1e-4, 1e-5) and `epoch` (an integer, every
10,000 steps). Seeded: the same file every time. The file has the format of
training.corpus.zst (bench/README.md), so that store_size.py replays it:

    /usr/bin/python3 bench/corpus/five_keys.py /tmp/five.corpus.zst
    .venv/bin/python bench/corpus/store_size.py --corpus /tmp/five.corpus.zst [--postgres]
    build/bench/corpus_bench --corpus /tmp/five.corpus.zst --keys
"""
import struct
import subprocess
import sys

import numpy as np


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: five_keys.py OUT.corpus.zst")
    rng = np.random.default_rng(1)
    n = 200_000
    steps = np.arange(n, dtype=np.int64)
    times = 1_760_000_000_000 + np.cumsum(rng.integers(95, 106, n)).astype(np.int64)
    loss = (2.5 * np.exp(-steps / 50000) + 0.1 + 0.05 * rng.standard_normal(n)).astype(np.float32)
    grad_norm = np.abs(1.0 + 0.3 * rng.standard_normal(n)).astype(np.float32)
    acc = np.round(np.clip(0.5 + 0.45 * (1 - np.exp(-steps / 40000))
                           + 0.02 * rng.standard_normal(n), 0, 1), 3)
    lr = np.where(steps < 100_000, 1e-3, np.where(steps < 150_000, 1e-4, 1e-5))
    epoch = (steps // 10_000).astype(np.float64)
    keys = [("train/loss", loss), ("train/grad_norm", grad_norm), ("val/acc", acc), ("lr", lr),
            ("epoch", epoch)]

    def s16(s):
        b = s.encode()
        return struct.pack("<H", len(b)) + b

    out = bytearray(b"CCORPUS1") + struct.pack("<I", len(keys))
    for key, values in keys:
        out += s16("five-keys") + s16("rank0") + b"\0" + s16(key) + struct.pack("<I", n)
        out += steps.astype("<i8").tobytes() + times.astype("<i8").tobytes()
        out += values.astype("<f8").tobytes()
    # --stream-size: the frame records its content size (corpus_bench.cc needs it).
    subprocess.run(["zstd", "-q", "-f", "-19", f"--stream-size={len(out)}", "-o", sys.argv[1]],
                   input=bytes(out), check=True)


if __name__ == "__main__":
    main()
