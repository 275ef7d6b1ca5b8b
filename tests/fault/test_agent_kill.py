"""kill -9 of the node agent while several training processes write through it: the clients
notice (their connection breaks), spawn a new agent that recovers the WALs the dead one left,
resend what it had not acknowledged, and finish in bounded time; every point arrives exactly
once.

The kill of one rank of a shared run (that writer becomes crashed, the run and the other
writers go on) is tests/distributed/test_scenario_shared.py::
test_sigkilled_rank_is_crashed_while_the_run_goes_on (real torch.distributed ranks).
"""
import os
import signal
import time

from fault_helpers import (SLOW, FaultServer, Writers, assert_exactly_once, random_run_id,
                           run_state, writer_states)
from conftest import wait_for

KILLS = 10 if SLOW else 2


def test_agent_killed_mid_run_is_replaced_and_nothing_acknowledged_is_lost(tmp_path):
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    sleep_ms = 4
    steps = int((KILLS * 1.5 + 2) / (sleep_ms / 1000.0 + 0.0005))
    shared, plain = random_run_id("ash"), random_run_id("apl")
    specs = {
        shared: {"rank_0": dict(writer=1, steps=steps, keys=4),
                 "rank_1": dict(writer=2, steps=steps, keys=4)},
        plain: {"solo": dict(writer=3, steps=steps, keys=4)},
    }
    try:
        writers.start(shared, 1, steps, label="rank_0", shared=True, primary=True,
                      sleep_ms=sleep_ms, extra=("--finish-timeout", "20"))
        writers.start(shared, 2, steps, label="rank_1", shared=True, primary=False,
                      sleep_ms=sleep_ms, extra=("--finish-timeout", "20"))
        writers.start(plain, 3, steps, label="solo", sleep_ms=sleep_ms,
                      extra=("--finish-timeout", "20"))
        killed = []
        for _ in range(KILLS):
            pid = wait_for(lambda: (p := writers.serving_agent()) not in killed and p, timeout=15)
            assert pid, "no (new) agent came up"
            time.sleep(1.0)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        t0 = time.monotonic()
        results = writers.wait_all(timeout=60)
        bounded_s = time.monotonic() - t0
        for spec, rc, out, err in results:
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
            assert "finish ok" in out, (spec, out[-2000:])
        assert writers.serving_agent() not in killed + [0], "the clients spawned no new agent"
        api = server.api()
        checked = 0
        for run_id, by_label in specs.items():
            checked += assert_exactly_once(api, run_id, by_label, timeout=60)
            assert wait_for(lambda: set(writer_states(api, run_id).values()) == {"finished"},
                            timeout=30), (run_id, writer_states(api, run_id))
            assert run_state(api, run_id) == "finished"
        print(f"agent kill: {len(killed)} agents killed, writers done {bounded_s:.1f} s after the "
              f"last kill, {checked} points checked exactly once")
    finally:
        writers.stop()
        server.stop()
