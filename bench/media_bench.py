"""Media (docs/benchmarks.md, "Media"): the training-thread cost of logging a 256x256x3 uint8
image with run.log (cohort.Image + run.log), in a tight loop and with a 20 ms gap between calls
(a training step), against the worker's PNG encoding of the same image; and the throughput of
media from a training process into the local blob store (MB/s of PNG bytes until every blob is
uploaded) next to the disk's write bandwidth (dd of the same amount). A fresh server, loopback.

Usage: python3 bench/media_bench.py   (the venv's python: numpy, Pillow)
"""
import json
import subprocess
import tempfile
import time

from _bench_server import BenchServer

SCRIPT = r"""
import io, json, time
import numpy as np
from PIL import Image as PILImage
import cohort
from cohort import media
from _bench_server import p50
rng = np.random.default_rng(0)
noise = rng.integers(0, 256, size=(256, 256, 3), dtype=np.uint8)
smooth = (np.add.outer(np.arange(256), np.arange(256)) % 256).astype(np.uint8)[:, :, None]
smooth = smooth.repeat(3, 2)
run = cohort.init(project="bench")
def encode(a):
    b = io.BytesIO()
    PILImage.fromarray(a).save(b, format="PNG", compress_level=3)
    return b.getvalue()
res = {
    "image_ctor_us": p50(lambda i: cohort.Image(smooth), 2000),
    "log_tight_us": p50(lambda i: run.log({"loss": 0.1, "img": cohort.Image(smooth)}), 200),
    "log_gap_us": p50(lambda i: run.log({"loss": 0.1, "img": cohort.Image(smooth)}), 100, 0.02),
    "png_smooth_ms": p50(lambda i: encode(smooth), 50) / 1000,
    "png_noise_ms": p50(lambda i: encode(noise), 20) / 1000,
}
media.drain(run, 120)
# Throughput: 200 noise images (incompressible PNGs of ~197 KB) as fast as the worker goes.
t0 = time.perf_counter()
for i in range(200):
    run.log({"noise": cohort.Image(np.roll(noise, i, axis=0))})
media.drain(run, 300)
res["encode_s"] = time.perf_counter() - t0
res["stats"] = media.stats()
res["run"] = run.id
run.finish()
print("RESULT " + json.dumps(res))
"""


def main():
    with tempfile.TemporaryDirectory() as tmp, BenchServer(tmp) as srv:
        proc = srv.run_script(SCRIPT)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
        res = json.loads(line[7:])
        entity = srv.get("/api/v1/viewer")["entity"]
        path = f"/api/v1/runs/{entity}/bench/{res['run']}/media?keys=noise"
        t0 = time.perf_counter()
        while True:  # until every blob is held by the server
            rows = srv.get(path)["media"]
            if len(rows) == 200 and all(r["uploaded"] for r in rows):
                break
            if time.perf_counter() - t0 > 300:
                raise RuntimeError("the uploads did not complete")
            time.sleep(0.05)
        total = sum(r["size"] for r in rows)
        res["ingest_mb_s"] = total / 1e6 / (res["encode_s"] + time.perf_counter() - t0)
        dd = subprocess.run(["dd", "if=/dev/zero", f"of={tmp}/dd.bin", "bs=1M",
                             f"count={max(1, total >> 20)}", "conv=fdatasync"],
                            capture_output=True, text=True)
        res["dd"] = dd.stderr.strip().splitlines()[-1]
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
