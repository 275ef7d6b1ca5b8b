"""Media through a server outage (issue 15): a real Python training process logs images and a
table while the server is stopped (connections refused) and finishes during the outage; once the
server is back, the node agent uploads the blobs (media intents) and the batches with their rows,
and every image is stored once, byte for byte, under its step: acknowledged media are never lost.
"""
import hashlib
import io
import os
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from conftest import BUILD, COHORT_BIN, ROOT, wait_for
from fault_helpers import _SCRUB, FaultServer, random_run_id

PIL = pytest.importorskip("PIL.Image", reason="cohort.Image encodes arrays with Pillow")

SCRIPT = r"""
import os, sys, time
import numpy as np
import cohort
run = cohort.init(project="fault", id=os.environ["RUN_ID"], settings=cohort.Settings(
    init_timeout=3, finish_timeout=5))
for step in range(int(os.environ["STEPS"])):
    pixels = np.full((3, 5, 3), step % 256, dtype=np.uint8)
    pixels[0, 0] = [step // 256, 7, 9]
    run.log({"loss": 1.0 / (step + 1), "img": cohort.Image(pixels, caption=str(step)),
             "tab": cohort.Table(columns=["step"], data=[[step]])})
    if step == 5:
        open(os.environ["MARK"], "w").close()   # the test stops the server now
    time.sleep(0.05)
run.finish()
print("DONE", flush=True)
"""


def _get(server, path):
    req = urllib.request.Request(server.url + path)
    req.add_header("Authorization", "Bearer " + server.config["api_key"])
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read()


def test_media_logged_during_an_outage_arrive_once_the_server_is_back(tmp_path):
    server = FaultServer(tmp_path).start()
    run_id = random_run_id("media")
    steps = 60
    script = tmp_path / "media_writer.py"
    script.write_text(SCRIPT)
    mark = tmp_path / "mark"
    env = {k: v for k, v in server.env.items() if k not in _SCRUB}
    env.update(COHORT_BIN=str(COHORT_BIN), COHORT_BUILD_DIR=str(BUILD),
               PYTHONPATH=str(ROOT / "python"), COHORT_BASE_URL=server.url,
               COHORT_API_KEY=server.config["api_key"], COHORT_BACKOFF_MAX_S="1",
               COHORT_AGENT_IDLE_S="5", RUN_ID=run_id, STEPS=str(steps), MARK=str(mark))
    proc = subprocess.Popen([sys.executable, str(script)], env=env, cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(mark.exists, timeout=60), "the writer never reached step 5"
        server.stop()
        out, err = proc.communicate(timeout=120)  # finishes while the server is down
        assert proc.returncode == 0 and "DONE" in out, (out, err)
        time.sleep(2)
        server.start()
        api = server.api()
        entity = api.get("/api/v1/viewer")[1]["entity"]
        base = f"/api/v1/runs/{entity}/fault/{run_id}"

        def rows():
            status, body = api.get(base + "/media?keys=img")
            return body["media"] if status == 200 else []

        assert wait_for(lambda: len(rows()) == steps and all(r["uploaded"] for r in rows()),
                        timeout=90), (len(rows()), rows()[:2])
        got = rows()
        assert [r["step"] for r in got] == list(range(steps))  # each step once
        for r in got:
            data = _get(server, r["url"])
            assert hashlib.sha256(data).hexdigest() == r["sha256"]
            with PIL.open(io.BytesIO(data)) as im:
                pixels = np.asarray(im)
            want = np.full((3, 5, 3), r["step"] % 256, dtype=np.uint8)
            want[0, 0] = [r["step"] // 256, 7, 9]
            assert np.array_equal(pixels, want) and r["caption"] == str(r["step"]), r
        status, table = api.get(base + "/tables/tab")
        assert status == 200 and table["step"] == steps - 1 and table["data"] == [[steps - 1]]
        status, hist = api.get(base + "/history?keys=loss")
        assert status == 200 and len(hist["series"][0]["points"]) == steps
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop()
