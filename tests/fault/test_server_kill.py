"""kill -9 of the server at random moments while several writers ingest, restarted on the same
data directory, again and again: every point a writer logged is stored exactly once.

Writers: two ranks of one shared run and one plain run through the real node agent, and one
plain run with the in-process sender (COHORT_AGENT=inprocess). The default suite runs a few
cycles; COHORT_SLOW_TESTS=1 runs 50.
"""
import random
import time

from fault_helpers import (SLOW, FaultServer, Writers, assert_exactly_once, random_run_id,
                           run_state, writer_states)
from conftest import wait_for

CYCLES = 50 if SLOW else 6


def test_server_killed_at_random_moments_stores_every_point_exactly_once(tmp_path):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    # Each cycle is ~1.2 s up + ~0.4 s down; the writers log over all of it.
    sleep_ms = 5
    steps = int(CYCLES * 1.8 / (sleep_ms / 1000.0 + 0.0005))
    shared, plain, inproc = (random_run_id("shr"), random_run_id("pln"), random_run_id("inp"))
    specs = {
        shared: {"rank_0": dict(writer=1, steps=steps, keys=4),
                 "rank_1": dict(writer=2, steps=steps, keys=4)},
        plain: {"solo": dict(writer=3, steps=steps, keys=4)},
        inproc: {"inproc": dict(writer=4, steps=steps, keys=4)},
    }
    try:
        writers.start(shared, 1, steps, label="rank_0", shared=True, primary=True,
                      sleep_ms=sleep_ms)
        writers.start(shared, 2, steps, label="rank_1", shared=True, primary=False,
                      sleep_ms=sleep_ms)
        writers.start(plain, 3, steps, label="solo", sleep_ms=sleep_ms)
        writers.start(inproc, 4, steps, label="inproc", sleep_ms=sleep_ms, inprocess=True)
        t0 = time.monotonic()
        for _ in range(CYCLES):
            time.sleep(rng.uniform(0.2, 1.2))
            server.kill9()
            time.sleep(rng.uniform(0.05, 0.6))
            server.start()
        churn_s = time.monotonic() - t0
        results = writers.wait_all(timeout=120)
        for spec, rc, out, err in results:
            assert rc == 0, (seed, spec, rc, out[-2000:], err[-2000:])
            assert "finish ok" in out, (seed, spec, out[-2000:])
        api = server.api()
        checked = 0
        for run_id, by_label in specs.items():
            checked += assert_exactly_once(api, run_id, by_label, timeout=90)
            assert wait_for(lambda: set(writer_states(api, run_id).values()) == {"finished"},
                            timeout=30), (seed, run_id, writer_states(api, run_id))
            assert run_state(api, run_id) == "finished", (seed, run_id)
        assert server.kills == CYCLES
        print(f"server kill: {CYCLES} kill -9 cycles over {churn_s:.1f} s, {checked} points "
              f"checked exactly once (seed {seed})")
    finally:
        writers.stop()
        server.stop()
