"""Lifecycles of a training process against the real server and agent: exit codes at exit,
context manager, SIGTERM, init with the server down, bounded finish, a dead agent."""
import json
import os
import signal
import time

from conftest import ServerProcess
from dist_helpers import (Client, assert_ok, client, free_port, start_server_on,  # noqa: F401
                          wait_until)

HEADER = "import os, sys, time, json\nimport cohort\n"


def only_run(client):
    runs = wait_until(lambda: client.runs(project="life"), what="a run")
    assert len(runs) == 1
    return client.run_view(runs[0]["id"], project="life")


def final(view):
    ended = ("finished", "failed", "crashed", "killed", "preempted")
    return wait_until(lambda: (r := view.get())["state"] in ended and r, what="run ended")


def test_exit_without_finish_marks_the_run_finished(client):
    assert_ok(client.python(HEADER + "r = cohort.init(project='life')\nr.log({'a': 1})\n"))
    view = only_run(client)
    run = final(view)
    assert (run["state"], run["exit_code"]) == ("finished", 0)
    assert wait_until(lambda: view.history(keys=["a"]), what="point")


def test_sys_exit_code_marks_the_run_failed_with_that_code(client):
    proc = client.python(HEADER + "cohort.init(project='life').log({'a': 1})\nsys.exit(3)\n")
    assert proc.returncode == 3
    run = final(only_run(client))
    assert (run["state"], run["exit_code"]) == ("failed", 3)


def test_uncaught_exception_marks_the_run_failed_with_exit_code_1(client):
    proc = client.python(HEADER + "cohort.init(project='life')\nraise ValueError('boom')\n")
    assert proc.returncode == 1 and "ValueError: boom" in proc.stderr  # traceback still shown
    view = only_run(client)
    run = final(view)
    assert (run["state"], run["exit_code"]) == ("failed", 1)
    assert list(view.writers().values())[0]["state"] == "failed"


def test_exception_in_context_manager_fails_the_run_even_when_caught_outside(client):
    assert_ok(client.python(HEADER + (
        "try:\n"
        "    with cohort.init(project='life') as run:\n"
        "        run.log({'a': 1})\n"
        "        raise KeyError('x')\n"
        "except KeyError:\n"
        "    pass\n"
        "assert cohort.run is None\n")))
    run = final(only_run(client))
    assert (run["state"], run["exit_code"]) == ("failed", 1)


def _start_and_wait_ready(client, code):
    proc = client.popen(["-c", HEADER + code])
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def test_sigterm_marks_the_writer_killed_and_the_process_still_dies_of_it(client):
    proc = _start_and_wait_ready(client, (
        "r = cohort.init(project='life')\nr.log({'a': 1})\nprint('ready', flush=True)\n"
        "time.sleep(60)\n"))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    view = only_run(client)
    run = final(view)
    assert (run["state"], run["exit_code"]) == ("killed", 143)
    assert list(view.writers().values())[0]["state"] == "killed"


def test_the_packages_threads_leave_the_programs_signals_to_its_main_thread(client):
    """Every thread the SDK starts (the native client's flush, console and reaper threads, the
    media worker) blocks SIGINT and SIGTERM, so that the kernel hands them to the program's main
    thread, where Python runs its handlers: delivered to another thread, a SIGTERM left the
    main thread asleep in time.sleep(60) and the process alive past its test's 30 s (a CI run)."""
    proc = _start_and_wait_ready(client, (
        "import os\n"
        "os.environ['COHORT_MEDIA_ENCODERS'] = '2'  # the media encoders' pool too\n"
        "r = cohort.init(project='life')\n"
        "r.log({'a': 1, 'page': [cohort.Html('<p>hi</p>'), cohort.Html('<p>ho</p>')]})\n"
        "time.sleep(0.5)\n"
        "assert 'numpy' not in sys.modules  # its BLAS threads are not the SDK's\n"
        "print('ready', flush=True)\ntime.sleep(60)\n"))
    try:
        def blocked(task):
            status = open(f"/proc/{proc.pid}/task/{task}/status").read()
            return int(next(line.split()[1] for line in status.splitlines()
                            if line.startswith("SigBlk:")), 16)
        def threads():
            return [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        # At least the flush thread, the media worker and one thread of the encoders' pool (a
        # process without the pool has three threads besides the main one here).
        others = wait_until(lambda: t if len(t := threads()) >= 4 else None, timeout=10,
                            what="the SDK's threads")
        names = {t: open(f"/proc/{proc.pid}/task/{t}/comm").read().strip() for t in others}
        for t in others:
            for sig in (signal.SIGINT, signal.SIGTERM):
                assert blocked(t) & (1 << (sig - 1)), (names[t], hex(blocked(t)))
        assert not blocked(proc.pid) & (1 << (signal.SIGTERM - 1))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGTERM


def test_sigterm_runs_the_previous_python_handler_too(client, tmp_path):
    marker = tmp_path / "handler-ran"
    proc = _start_and_wait_ready(client, (
        "import signal\n"
        f"def handler(s, f):\n    open({str(marker)!r}, 'w').close()\n    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, handler)\n"
        "r = cohort.init(project='life')\nprint('ready', flush=True)\ntime.sleep(60)\n"))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == 0 and marker.exists()
    run = final(only_run(client))
    assert run["state"] == "killed"


def test_init_returns_within_init_timeout_with_the_server_down_and_data_arrives_later(
        tmp_path):
    server = ServerProcess(tmp_path).start()  # first start: writes the key and the config
    port = free_port()
    server.stop()
    start_server_on(server, port)
    cfg_path = server.home / ".config" / "cohort" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg_url = f"http://127.0.0.1:{port}"
    client = Client(server, tmp_path)
    server.stop()  # down before the training process starts
    go = tmp_path / "go"
    try:
        proc = client.popen(["-c", HEADER + (
            "t0 = time.monotonic()\n"
            "r = cohort.init(project='life', settings=cohort.Settings(init_timeout=2))\n"
            "print(json.dumps({'init_s': time.monotonic() - t0, 'id': r.id, 'offline': r.offline}),"
            " flush=True)\n"
            "for i in range(100):\n    r.log({'x': i})\n"
            f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.05)\n"
            "r.finish()\n")], env={"COHORT_BASE_URL": cfg_url, "COHORT_API_KEY": cfg["api_key"]})
        info = json.loads(proc.stdout.readline())
        assert info["init_s"] < 3.5, info
        start_server_on(server, port)  # the server comes back
        go.write_text("")
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        view = client.run_view(info["id"], project="life")
        hist = wait_until(lambda: (h := view.history(keys=["x"])) and
                          sum(len(p) for p in h.values()) == 100 and h, timeout=90,
                          what="100 points after the server came back")
        assert [v for _, v in next(iter(hist.values()))] == [float(i) for i in range(100)]
        assert wait_until(lambda: view.get()["state"] == "finished", timeout=60, what="finished")
    finally:
        client.stop_agents()
        server.stop()


def test_finish_returns_within_finish_timeout_with_the_server_down(client):
    proc = _start_and_wait_ready(client, (
        "r = cohort.init(project='life', settings=cohort.Settings(finish_timeout=2))\n"
        "r.log({'a': 1})\nprint('ready', flush=True)\n"
        "while not os.path.exists('server-down'):\n    time.sleep(0.05)\n"
        "for i in range(1000):\n    r.log({'b': i})\n"
        "t0 = time.monotonic()\nr.finish()\nprint(time.monotonic() - t0, flush=True)\n"))
    client.server.stop()
    (client.tmp / "server-down").write_text("")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert float(out.strip().splitlines()[-1]) < 3.5


def test_finish_is_bounded_when_the_agent_is_killed(client):
    proc = _start_and_wait_ready(client, (
        "r = cohort.init(project='life', settings=cohort.Settings(finish_timeout=2))\n"
        "r.log({'a': 1})\nprint('ready', flush=True)\n"
        "while not os.path.exists('agent-killed'):\n    time.sleep(0.05)\n"
        "for i in range(1000):\n    r.log({'b': i})\n"
        "t0 = time.monotonic()\nr.finish()\nprint(time.monotonic() - t0, flush=True)\n"))
    pids = wait_until(client.agent_pids, what="the agent")
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    (client.tmp / "agent-killed").write_text("")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert float(out.strip().splitlines()[-1]) < 3.5


def test_a_run_whose_shared_agent_socket_is_unusable_still_uploads(client):
    # The shared agent's socket directory would be a regular file: no shared agent can start,
    # the run starts a private agent (`cohort agent --private`) and uploads all the same.
    blocker = client.tmp / "not-a-dir"
    blocker.write_text("x")
    t0 = time.monotonic()
    assert_ok(client.python(HEADER + (
        "r = cohort.init(project='life', settings=cohort.Settings(init_timeout=10))\n"
        "for i in range(10):\n    r.log({'x': i})\n"
        "r.finish()\n"), env={"COHORT_AGENT_SOCKET": str(blocker / "agent.sock")}))
    assert time.monotonic() - t0 < 30
    view = only_run(client)
    assert final(view)["state"] == "finished"
    wait_until(lambda: (h := view.history(keys=["x"])) and
               sum(len(p) for p in h.values()) == 10 and h, what="10 points")
    # The private agent exits once its uploads are done.
    wait_until(lambda: client.agent_pids() == [], what="the private agent to exit")


def test_x_agent_inprocess_runs_a_private_agent(client):
    assert_ok(client.python(HEADER + (
        "r = cohort.init(project='life', settings=cohort.Settings(x_agent='inprocess'))\n"
        "for i in range(10):\n    r.log({'x': i})\n"
        "r.finish()\n")))
    view = only_run(client)
    assert final(view)["state"] == "finished"
    wait_until(lambda: (h := view.history(keys=["x"])) and
               sum(len(p) for p in h.values()) == 10 and h, what="10 points")
    sock = client.server.home / "run" / "cohort" / "agent.sock"
    assert not sock.exists(), "a private agent listens on no socket"


def test_without_a_cohort_binary_init_fails_naming_cohort_bin(client):
    r = client.python(HEADER + (
        "try:\n"
        "    cohort.init(project='life', settings=cohort.Settings(init_timeout=5))\n"
        "except Exception as e:\n"
        "    print('init failed:', e)\n"), env={"COHORT_BIN": "/nonexistent/cohort"})
    assert_ok(r)
    assert "init failed:" in r.stdout and "COHORT_BIN" in r.stdout, r.stdout


def test_a_writer_that_ends_at_once_still_has_system_metrics(client):
    # The default 15 s interval: the sample taken as the writer joins is the only one.
    assert_ok(client.python(HEADER + "cohort.init(project='life').log({'a': 1})\n"))
    view = only_run(client)
    final(view)
    system = wait_until(lambda: view.system(), what="system metrics")
    assert "memory" in {key for key, _ in system}, system
