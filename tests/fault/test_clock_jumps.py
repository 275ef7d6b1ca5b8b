"""Clock jumps on the clients: the wall clock of the training processes (and of the agent they
spawn, which inherits the environment) jumps ten years ahead, then thirty years back, then to
the true time, while they log (tests/fault/clock_shift.c, an LD_PRELOAD library, driven through
a file the test writes). Steps keep their order, every point arrives once with its value,
nothing hangs (init, flushes and finish are bounded), and the run and writer states are right:
the server's own clock decides heartbeats, so points stamped in 1996 or 2036 neither crash nor
revive a writer.
"""
import fcntl
import os
import socket
import subprocess
import time

from fault_helpers import (CLOCK_SHIFT_LIB, FaultServer, Writers, assert_exactly_once,
                           key_counts, random_run_id, run_path, run_state, value, writer_states)
from conftest import COHORT_BIN, wait_for

YEAR_S = 365 * 24 * 3600


def test_client_clock_jumps_keep_order_and_state(tmp_path):
    assert CLOCK_SHIFT_LIB.exists(), f"build the project first: {CLOCK_SHIFT_LIB} is missing"
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    shift = tmp_path / "clock-offset"
    run_id = random_run_id("clk")
    steps = 1500
    try:
        t0 = time.monotonic()
        procs = [writers.start(run_id, w, steps, label=label, shared=True, primary=(w == 1),
                               sleep_ms=4, extra=("--finish-timeout", "10"),
                               LD_PRELOAD=str(CLOCK_SHIFT_LIB),
                               COHORT_CLOCK_SHIFT_FILE=str(shift))
                 for w, label in ((1, "rank_0"), (2, "rank_1"))]
        for p in procs:  # both log (and their agent runs) before the clock moves
            assert p.stdout.readline().startswith("run "), p.stderr.read()
            assert p.stdout.readline().strip() == "logged 100"
        for offset, hold_s in ((10 * YEAR_S, 1.0), (-30 * YEAR_S, 1.0),
                               (-30 * YEAR_S + 3600, 0.5), (0, 0)):
            shift.write_text(str(offset))
            time.sleep(hold_s)
        results = writers.wait_all(timeout=60)
        took = time.monotonic() - t0
        for spec, rc, out, err in results:
            assert rc == 0, (spec, rc, out[-2000:], err[-2000:])
            assert "finish ok" in out, out
        api = server.api()
        specs = {"rank_0": dict(writer=1, steps=steps, keys=4),
                 "rank_1": dict(writer=2, steps=steps, keys=4)}
        checked = assert_exactly_once(api, run_id, specs, timeout=60)
        # The stamps really jumped: some points are from the future, some from the past.
        status, body = api.get(run_path(api, run_id) + "/history?keys=k0&writers=rank_0")
        times = [p[1] for p in body["series"][0]["points"]]
        now_ms = time.time() * 1000
        assert max(times) > now_ms + 5 * YEAR_S * 1000, max(times)
        assert min(times) < now_ms - 20 * YEAR_S * 1000, min(times)
        assert wait_for(lambda: set(writer_states(api, run_id).values()) == {"finished"},
                        timeout=30), writer_states(api, run_id)
        assert run_state(api, run_id) == "finished"
        print(f"clock jumps: 2 writers, {checked} points in step order, done in {took:.1f} s")
    finally:
        writers.stop()
        server.stop()


def test_clock_jumping_back_during_a_bounded_finish_does_not_hang(tmp_path):
    # The server accepts connections but never answers, so Init and Finish wait (bounded by
    # their timeouts) for confirmations that cannot come; meanwhile the wall clock jumps 30
    # years back. A deadline kept on the wall clock would then lie 30 years ahead.
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    server.stop()
    hung = socket.socket()
    hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    hung.bind(("127.0.0.1", server.port))
    hung.listen(64)  # connections complete in the kernel; nobody reads or answers
    shift = tmp_path / "clock-offset"
    try:
        t0 = time.monotonic()
        p = writers.start(random_run_id("clf"), 1, 100, label="w", sleep_ms=0,
                          extra=("--finish-timeout", "3", "--init-timeout", "2"),
                          LD_PRELOAD=str(CLOCK_SHIFT_LIB), COHORT_CLOCK_SHIFT_FILE=str(shift))
        assert p.stdout.readline().startswith("run "), p.stderr.read()
        assert p.stdout.readline().strip() == "logged 100"  # Finish comes next
        time.sleep(0.5)
        shift.write_text(str(-30 * YEAR_S))
        (spec, rc, out, err), = writers.wait_all(timeout=60)
        took = time.monotonic() - t0
        # The agent answers when its (monotonic) wait is over, before the client's deadline; a
        # wall-clock wait in the agent never answered ("finish error: deadline_exceeded").
        assert "finish ok" in out, (out, err)
        finish_s = float(out.strip().splitlines()[-1].split()[-1])
        assert finish_s > 1, out  # Finish did wait, so the jump came during its wait
        assert took < 10, (took, out)
        print(f"clock jump during finish: {out.strip().splitlines()[-1]!r}, {took:.1f} s in all")
    finally:
        writers.stop()
        hung.close()


def _stream_marks(db_path, label):
    """The highest seq each agent stream stored for the writer (ordered_streams)."""
    import sqlite3
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        return sorted(r[0] for r in con.execute(
            "SELECT o.seq FROM ordered_streams o JOIN writers w ON w.pk = o.writer_pk "
            "WHERE w.label = ?", (label,)))
    finally:
        con.close()


def test_rejoined_writer_after_clock_went_back_is_not_dropped_as_duplicate(tmp_path):
    # Batch seqs were derived from the wall clock (ms << 20). Writer A ran with its clock a year
    # ahead, and the server keeps the highest seq A's agent stream stored as that stream's
    # "stored before" mark (before agent batches left no records, the same mark came from
    # retention pruning A's records). Writer B re-joins the same run and label from a fresh WAL
    # with the true clock: its clock-derived seqs lie below that mark, and a server that applied
    # the mark to B would acknowledge every batch as a duplicate and store nothing. B's stream
    # has an id of its own, and it numbers its batches above the writer's last_seq that the join
    # returns.
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    ahead = tmp_path / "writer-a-clock-offset"
    ahead.write_text(str(YEAR_S))
    run_id = random_run_id("clq")
    steps = 200
    try:
        writers.start(run_id, 1, steps, label="w", sleep_ms=0, inprocess=True,
                      LD_PRELOAD=str(CLOCK_SHIFT_LIB), COHORT_CLOCK_SHIFT_FILE=str(ahead))
        (spec, rc, out, err), = writers.wait_all(timeout=60)
        assert rc == 0 and "finish ok" in out, (out, err)
        api = server.api()
        assert_exactly_once(api, run_id, {"w": dict(writer=1, steps=steps, keys=4)}, timeout=30)
        db = server.data_dir / "cohort.db"
        marks = _stream_marks(db, "w")
        assert len(marks) == 1 and marks[0] > int(time.time() * 1000) << 20, marks
        # A's stream directory goes once everything in it is uploaded (its lock with it).
        a_dir = server.home / ".local/share/cohort/agent" / run_id / "w"
        assert wait_for(lambda: not a_dir.exists(), timeout=30), list(a_dir.rglob("*"))
        writers.procs.clear()
        writers.start(run_id, 2, steps, label="w", sleep_ms=0, inprocess=True)
        (spec, rc, out, err), = writers.wait_all(timeout=60)
        assert rc == 0 and "finish ok" in out, (out, err)
        want = {(f"k{k}", "w"): 2 * steps for k in range(4)}
        got = wait_for(lambda: (c := key_counts(api, run_id)) == want and c, timeout=30,
                       interval=0.2)
        assert got == want, f"B's points were dropped: {key_counts(api, run_id)} != {want}"
        status, body = api.get(run_path(api, run_id) + "/history?keys=k0&writers=w")
        points = body["series"][0]["points"]
        assert [p[0] for p in points] == list(range(2 * steps))
        # B's steps continue A's (the re-join's next_step); B computed its values from 0.
        assert [p[2] for p in points] == ([value(1, s, 0) for s in range(steps)] +
                                          [value(2, s, 0) for s in range(steps)])
        assert len(_stream_marks(db, "w")) == 2  # B's stream kept its own mark
    finally:
        writers.stop()
        server.stop()


def test_clock_jumping_ahead_while_init_waits_for_the_agent_does_not_end_the_wait(tmp_path):
    # Init spawns the agent and waits, bounded by init_timeout, until its socket answers; an
    # agent still on its way out holds the agent lock (here: the test), so each spawned agent
    # exits at once and Init spawns again every second. The wall clock jumps ten years ahead
    # during that wait. When the transports took wall-clock deadlines, the jump ended the wait at
    # once and the client fell back to its in-process pipeline for good (no agent ever served
    # it); on the monotonic clock Init goes on waiting and the agent serves the run once the
    # lock is free.
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    shift = tmp_path / "clock-offset"
    sock_dir = server.home / "run" / "cohort"
    os.makedirs(sock_dir, mode=0o700, exist_ok=True)
    os.chmod(sock_dir, 0o700)
    lock_fd = os.open(sock_dir / "agent.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    run_id = random_run_id("cls")
    try:
        t0 = time.monotonic()
        p = writers.start(run_id, 1, 200, label="w", sleep_ms=0,
                          extra=("--init-timeout", "20", "--finish-timeout", "20"),
                          LD_PRELOAD=str(CLOCK_SHIFT_LIB), COHORT_CLOCK_SHIFT_FILE=str(shift))
        time.sleep(1.0)
        shift.write_text(str(10 * YEAR_S))  # while Init waits for the agent's socket
        time.sleep(1.5)
        os.close(lock_fd)  # the old agent is gone: the next spawn comes up
        lock_fd = -1
        (spec, rc, out, err), = writers.wait_all(timeout=60)
        took = time.monotonic() - t0
        assert rc == 0 and "finish ok" in out, (rc, out, err[-2000:])
        assert took > 2.5, took  # Init did wait across the jump
        # The run went through a spawned agent, not the in-process fallback.
        assert writers.serving_agent() != 0, writers.agent_pids()
        assert_exactly_once(server.api(), run_id,
                            {"w": dict(writer=1, steps=200, keys=4)}, timeout=60)
        print(f"clock jump during the wait for the agent: served by the agent, {took:.1f} s")
    finally:
        if lock_fd >= 0:
            os.close(lock_fd)
        writers.stop()
        server.stop()


def test_idle_agent_exits_after_the_clock_went_back(tmp_path):
    # The node agent exits after its idle time without clients or uploads. Timed on the wall
    # clock, a clock set 30 years back during that time kept the idle agent alive for 30 years.
    shift = tmp_path / "clock-offset"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COHORT_")}
    env.update(HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path / "run"),
               LD_PRELOAD=str(CLOCK_SHIFT_LIB), COHORT_CLOCK_SHIFT_FILE=str(shift))
    (tmp_path / "run").mkdir(mode=0o700)
    agent = subprocess.Popen([str(COHORT_BIN), "agent", "--socket", str(tmp_path / "agent.sock"),
                              "--data-dir", str(tmp_path / "wal"), "--idle-exit", "4"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (tmp_path / "agent.sock").exists() or agent.poll() is not None,
                        timeout=20), "the agent never listened"
        assert agent.poll() is None, agent.communicate()
        shift.write_text(str(-30 * YEAR_S))  # while its idle time runs
        t0 = time.monotonic()
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("the idle agent still runs 30 s after the clock went back")
        took = time.monotonic() - t0
        out, err = agent.communicate()
        assert agent.returncode == 0, (agent.returncode, err[-2000:])
        assert took < 10, took
        print(f"idle agent exited {took:.1f} s after the clock went 30 years back")
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
