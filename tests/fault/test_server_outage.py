"""The server unreachable for a long while (stopped, so connections are refused), then back:
the training processes go on and finish in bounded time, the agent's WALs drain once the server
is back, and the runs end with every point exactly once and the right states.

Default suite: ~12 s down with the agent's backoff capped at 2 s (COHORT_BACKOFF_MAX_S);
COHORT_SLOW_TESTS=1: 3 minutes down with the default backoff cap (30 s).
"""
import time

from fault_helpers import (SLOW, FaultServer, Writers, assert_exactly_once, random_run_id,
                           run_state, writer_states)
from conftest import wait_for

DOWN_S = 180 if SLOW else 12
BACKOFF_MAX_S = "30" if SLOW else "2"


def test_server_down_for_a_long_while_then_back_drains_the_wal(tmp_path):
    server = FaultServer(tmp_path).start()
    writers = Writers(server, COHORT_BACKOFF_MAX_S=BACKOFF_MAX_S, COHORT_AGENT_IDLE_S="3")
    sleep_ms = 10
    # The writers log before, during and after the outage, and finish while it lasts (Finish is
    # bounded: the agent has everything durable, the upload comes later).
    steps = int((DOWN_S + 4) / (sleep_ms / 1000.0 + 0.0005))
    late_steps = int(3 / (sleep_ms / 1000.0 + 0.0005))
    run_a, run_b = random_run_id("oua"), random_run_id("oub")
    try:
        writers.start(run_a, 1, steps, label="long", sleep_ms=sleep_ms,
                      extra=("--finish-timeout", "5"))
        writers.start(run_b, 2, late_steps, label="short", sleep_ms=sleep_ms,
                      extra=("--finish-timeout", "5"))
        time.sleep(2)
        server.stop()  # SIGTERM: down, connections refused
        down_at = time.monotonic()
        # A run that starts while the server is down: Init returns (buffering), data follows.
        writers.start(run_b, 3, late_steps, label="started_during_outage", sleep_ms=sleep_ms,
                      extra=("--finish-timeout", "5", "--init-timeout", "3"))
        time.sleep(max(0, DOWN_S - (time.monotonic() - down_at)))
        server.start()
        back_at = time.monotonic()
        results = writers.wait_all(timeout=60)
        for spec, rc, out, err in results:
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
        started_during = [r for r in results if r[0]["label"] == "started_during_outage"][0]
        assert "offline 1" in started_during[2], started_during[2]
        api = server.api()
        specs = {
            run_a: {"long": dict(writer=1, steps=steps, keys=4)},
            run_b: {"short": dict(writer=2, steps=late_steps, keys=4),
                    "started_during_outage": dict(writer=3, steps=late_steps, keys=4)},
        }
        checked = 0
        for run_id, by_label in specs.items():
            checked += assert_exactly_once(api, run_id, by_label, timeout=90)
        drained_s = time.monotonic() - back_at
        for run_id in specs:
            assert wait_for(lambda: set(writer_states(api, run_id).values()) == {"finished"},
                            timeout=30), (run_id, writer_states(api, run_id))
            assert run_state(api, run_id) == "finished"
        # The WALs drained: the agent, idle once everything is uploaded, exits and removes the
        # finished writers' WAL directories.
        wal_root = server.home / ".local" / "share" / "cohort" / "agent"
        assert wait_for(lambda: not writers.agent_pids(), timeout=30), writers.agent_pids()
        left = [p for run_id in specs for p in (wal_root / run_id).glob("*")]
        assert left == [], left
        print(f"server outage: down {DOWN_S} s, all {checked} points in {drained_s:.1f} s after "
              f"the restart (backoff cap {BACKOFF_MAX_S} s)")
    finally:
        writers.stop()
        server.stop()
