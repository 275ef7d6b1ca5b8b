"""Media (docs/benchmarks.md, "Media"): the training-thread cost of logging a 256x256x3 uint8
image with run.log (cohort.Image + run.log), in a tight loop and with a 20 ms gap between calls
(a training step), against the worker's PNG encoding of the same image; and the throughput of
media from a training process into the local blob store (MB/s of PNG bytes until every blob is
uploaded) next to the disk's write bandwidth (dd of the same amount). A fresh server, loopback.

Usage: python3 bench/media_bench.py   (the venv's python: numpy, Pillow)
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("BUILD_DIR", ROOT / "build"))
COHORT = BUILD / "src" / "cli" / "cohort"

SCRIPT = r"""
import io, json, os, statistics, time
import numpy as np
from PIL import Image as PILImage
import cohort
from cohort import media
rng = np.random.default_rng(0)
noise = rng.integers(0, 256, size=(256, 256, 3), dtype=np.uint8)
smooth = (np.add.outer(np.arange(256), np.arange(256)) % 256).astype(np.uint8)[:, :, None]
smooth = smooth.repeat(3, 2)
run = cohort.init(project="bench")
def p50(fn, n, gap=0.0):
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
        if gap:
            time.sleep(gap)
    return statistics.median(out) * 1e6
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
    with tempfile.TemporaryDirectory() as tmp:
        home = pathlib.Path(tmp) / "home"
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME="", XDG_DATA_HOME="",
                   XDG_RUNTIME_DIR=str(home / "run"), XDG_CACHE_HOME=str(home / "cache"))
        (home / "run").mkdir(parents=True, mode=0o700)
        server = subprocess.Popen([str(COHORT), "server", "--port", "0", "--data-dir",
                                   f"{tmp}/data"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            url = server.stdout.readline().strip()
            env.update({"PYTHONPATH": str(ROOT / "python"), "COHORT_BUILD_DIR": str(BUILD),
                        "COHORT_BIN": str(COHORT), "COHORT_AGENT_IDLE_S": "5"})
            script = pathlib.Path(tmp) / "log.py"
            script.write_text(SCRIPT)
            proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                                  text=True, timeout=1800)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if proc.returncode != 0 or line is None:
                raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
            res = json.loads(line[7:])
            key = json.loads((home / ".config" / "cohort" / "config.json").read_text())["api_key"]

            def get(u):
                return json.loads(urllib.request.urlopen(urllib.request.Request(
                    u, headers={"Authorization": "Bearer " + key})).read())

            entity = get(url + "/api/v1/viewer")["entity"]
            path = f"{url}/api/v1/runs/{entity}/bench/{res['run']}/media?keys=noise"
            t0 = time.perf_counter()
            while True:  # until every blob is held by the server
                rows = get(path)["media"]
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
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
