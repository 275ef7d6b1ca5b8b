"""A writer's connection to the node agent over a long run, and what happens when it breaks
while frames the agent has made durable are still unacknowledged at the client: nothing may be
stored twice, even when the agent has meanwhile recorded the writer as crashed and uploaded
everything (docs/formats.md, "Agent protocol": a reconnect drops the frames up to the open
reply's `last_frame` and resends the rest; the agent keeps the writer of a client that went
away while its process runs on)."""
import os
import pathlib
import signal
import threading
import time

from fault_helpers import (FaultServer, Writers, assert_exactly_once, random_run_id, run_state,
                           writer_states)
from conftest import wait_for


KEPT = "keeping the writer for its return"


def agent_log(server):
    path = server.home / ".local" / "share" / "cohort" / "agent" / "agent.log"
    return path.read_text() if path.exists() else ""


def test_a_client_sending_thousands_of_frames_reads_its_acks_and_is_never_dropped(tmp_path):
    # Every step is two frames (its row and a summary update, which is flushed at once), so
    # the agent acknowledges thousands of reads. A client that left those acks unread in its
    # socket filled it after a few hundred: the agent's ack write then blocked for its 10 s
    # send timeout, and it dropped the client as gone, recording the writer as crashed.
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    run_id = random_run_id("ack")
    steps = 3000
    try:
        writers.start(run_id, 1, steps, keys=2, sleep_ms=2, label="w",
                      extra=("--summary-every", "1"))
        [(spec, rc, out, err)] = writers.wait_all(timeout=240)
        assert rc == 0 and "finish ok" in out, (rc, out[-2000:], err[-2000:])
        api = server.api()
        assert_exactly_once(api, run_id, {"w": dict(writer=1, steps=steps, keys=2)})
        log = agent_log(server)
        opens = log.count(f"open fault/{run_id} label w")
        assert "client gone without finish" not in log and opens == 1, log[-3000:]
        assert writer_states(api, run_id) == {"w": "finished"}
        assert run_state(api, run_id) == "finished"
    finally:
        writers.stop()
        server.stop()


def sockets(pid):
    """The inodes of the sockets process `pid` has open."""
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


class Lines:
    """Collects a pipe's lines in a thread, so a test can wait for one while the process runs."""

    def __init__(self, pipe):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe):
        for line in pipe:
            self.lines.append(line)

    def text(self):
        return "".join(self.lines)

    def join(self):
        self._thread.join(timeout=10)


def settled(server, run_id):
    """Every connection the client opened but one has ended at the agent."""
    log = agent_log(server)
    # Each ended connection logs "client gone from this connection, back on another" or "client
    # gone without finish".
    return log.count(f"open fault/{run_id} label w") == 1 + log.count(": client gone ")


def stop_agent_with_one_connection(server, agent, pid, run_id, timeout=60):
    """Stops `agent` (SIGSTOP) at a moment the client `pid` has one socket and the agent has seen
    the end of every other connection of the writer; returns that socket."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if wait_for(lambda: settled(server, run_id) and len(sockets(pid)) == 1, timeout=5):
            os.kill(agent, signal.SIGSTOP)
            assert wait_for(lambda: all_stopped(agent), timeout=30), "the agent did not stop"
            connection = sockets(pid)
            if settled(server, run_id) and len(connection) == 1:
                return connection
            os.kill(agent, signal.SIGCONT)
        time.sleep(0.2)
    raise AssertionError("the client's connections did not settle: " + agent_log(server)[-3000:])


def stop_client_between_connections(pid, timeout=30):
    """Stops the client `pid` (SIGSTOP) at a moment it holds no socket. While the agent is
    stopped the client keeps trying to connect again (a connect to a Unix socket completes in
    the listener's backlog, its hello waits there), and its connections come and go in an order
    the agent only reads once resumed: a connection the stopped client still held kept the agent
    serving the writer (seen in CI: the agent idle on a live connection of the client, the writer
    never recorded as crashed). With no socket left, every connection of the client ends at the
    agent, and the last end to be read records the crash."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        os.kill(pid, signal.SIGSTOP)
        assert wait_for(lambda: all_stopped(pid), timeout=30), "the client did not stop"
        if not sockets(pid):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError("the client never let go of its connections to the stopped agent")


def all_stopped(pid):
    """Whether every thread of process `pid` is stopped (SIGSTOP reaches them one by one)."""
    states = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            states.append(pathlib.Path(f"/proc/{pid}/task/{task}/stat").read_text()
                          .rsplit(") ", 1)[1][0])
        except (OSError, IndexError):
            continue  # a thread that ended meanwhile
    return bool(states) and all(st in "Tt" for st in states)


def test_frames_stored_after_the_client_gave_up_are_not_stored_again_once_the_writer_dir_is_gone(
        tmp_path):
    # The agent stops reading (SIGSTOP: a stall, as under heavy load) while the client logs
    # 2,000-key rows: its socket fills, the client's send times out and it drops the connection
    # with frames sent but unacknowledged. The client is then held (SIGSTOP) while the agent
    # resumes: it stores those frames, cannot ack them (the client is gone), records the writer
    # as crashed and uploads everything; its directory, which an earlier agent removed then, is
    # kept while the client's process runs. Then the client resumes, reconnects and opens its
    # session again: the agent must still report the frames of the session it stored, or the
    # client resends them and they are stored twice.
    server = FaultServer(tmp_path).start()
    writers = Writers(server)
    run_id = random_run_id("rcn")
    # Steps enough that the client is still logging (far from its finish) when it is stopped:
    # it is at ~200-300 then, and under load more slowly.
    steps, keys = 600, 2000
    proc = writers.start(run_id, 1, steps, keys=keys, sleep_ms=20, label="w",
                         extra=("--finish-timeout", "60"))
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    stopped = []
    try:
        assert wait_for(lambda: "logged 100" in out.text(), timeout=60), (out.text(), err.text())
        agent = writers.serving_agent()
        assert agent
        # The agent is stopped while the client has one connection, the one the agent serves the
        # writer on. (Under load the client may have given up on an earlier one, whose end the
        # agent had not read yet: then the earlier one's end is seen with the later one attached,
        # and the test waits for that to settle and stops the agent again.)
        connection = stop_agent_with_one_connection(server, agent, proc.pid, run_id)
        stopped.append(agent)
        # The client gives up on it (its send times out): the socket is closed, and it cannot
        # open another while the agent does not answer.
        assert wait_for(lambda: not connection & sockets(proc.pid), timeout=30), err.text()
        stopped.append(proc.pid)
        stop_client_between_connections(proc.pid)
        os.kill(agent, signal.SIGCONT)
        stopped.remove(agent)
        # The agent stores what it read, records the writer as crashed and uploads everything;
        # then, where it removed the writer's directory before, it keeps it for the client.
        api = server.api()
        assert wait_for(lambda: writer_states(api, run_id) == {"w": "crashed"}, timeout=30), (
            writer_states(api, run_id), agent_log(server)[-3000:])
        assert wait_for(lambda: KEPT in agent_log(server) or "WAL removed" in agent_log(server),
                        timeout=30)
        assert "WAL removed" not in agent_log(server), agent_log(server)
        os.kill(proc.pid, signal.SIGCONT)
        stopped.remove(proc.pid)
        assert proc.wait(timeout=120) == 0, (out.text()[-2000:], err.text()[-2000:])
        out.join()
        err.join()
        assert "finish ok" in out.text(), out.text()[-2000:]
        log = agent_log(server)
        # The client came back to the agent (not to an in-process pipeline of its own), which
        # had kept the writer for it. (More opens when a reconnect failed: one made with the
        # deadline of a flush that began before the client was stopped ends at once.)
        assert log.count(f"open fault/{run_id} label w") >= 2, log
        assert "the client that went away is back" in log, log
        assert_exactly_once(api, run_id, {"w": dict(writer=1, steps=steps, keys=keys)},
                            timeout=60)
        assert wait_for(lambda: writer_states(api, run_id) == {"w": "finished"}, timeout=30)
        # Finished now: the directory kept for the client goes.
        assert wait_for(lambda: "WAL removed" in agent_log(server), timeout=30), agent_log(server)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        writers.stop()
        server.stop()
