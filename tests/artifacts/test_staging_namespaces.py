"""A training process in another PID namespace than its node agent (a container beside the
agent's, sharing its data directory): the pid it writes into a staging directory's owner file
names another process in the agent's namespace, or none. The agent must not take that directory
for an orphan while the process runs (it would delete the copies of a checkpoint being logged, or
the media spool), and must delete it once the process is gone (docs/formats.md, "Artifact
intents"). Real namespaces (`unshare --pid`, root only), the real SDK's claim, the real agent."""
import os
import pathlib
import shutil
import subprocess
import sys
import threading

import pytest

import art_helpers  # noqa: F401  (paths: tests/, tests/python, tests/distributed)
from conftest import wait_for
from dist_helpers import client  # noqa: F401  (fixture)

def can_unshare_pid():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    try:
        probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                               capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not can_unshare_pid(),
    reason="a new PID namespace needs root (not in a container that forbids it) and "
           "util-linux's unshare")

STAGING = r"""
import cohort
run = cohort.init(project="ns")
print("STAGING", run._artifact_staging_dir, flush=True)
run.finish()
"""

# Claims a staging directory as the SDK does before it copies a file there, then waits.
CLAIM = r"""
import os, sys
from cohort.artifacts import _write_owner
d = sys.argv[1]
os.makedirs(d)
_write_owner(d)
with open(os.path.join(d, "0"), "w") as f:
    f.write("a staged copy")
print("CLAIMED", os.getpid(), flush=True)
sys.stdin.read()
"""


def agent_log(client):
    path = client.server.home / ".local" / "share" / "cohort" / "agent" / "agent.log"
    return path.read_text() if path.exists() else ""


def staging_dir(client):
    """Runs a short training process (which starts an agent) and returns the agent's staging
    directory."""
    proc = client.run(["-c", STAGING], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("STAGING ")]
    assert line, proc.stdout
    return pathlib.Path(line[0].split(" ", 1)[1])


def orphan_of_this_namespace(staging, name):
    """A directory whose owner file names this test's pid with another start: a process of the
    agent's namespace that has ended. Its removal tells that an agent's sweep ran."""
    stat = pathlib.Path("/proc/self/stat").read_text()
    start = int(stat[stat.rindex(")") + 2:].split()[19])
    boot = pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    d = staging / name
    d.mkdir()
    (d / "0").write_text("left by a process that ended")
    (d / ".owner").write_text(f"{os.getpid()} {start + 1} {boot}\n")
    return d


def test_a_client_in_another_pid_namespace_keeps_its_staging_while_it_runs(client):
    staging = staging_dir(client)
    claimed = staging / "claimed-in-a-container"
    proc = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", CLAIM, str(claimed)],
        env=client._env(None), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    try:
        if not wait_for(lambda: lines, timeout=60) or not lines[0].startswith("CLAIMED "):
            proc.kill()
            raise AssertionError((lines, proc.communicate(timeout=30)[1][-3000:]))
        pid_there = int(lines[0].split()[1])
        owner = (claimed / ".owner").read_text().split()
        assert owner[0] == str(pid_there) and len(owner) == 3, owner
        # Its lock file: its namespace, another than this one.
        ns_there = int((claimed / ".lock").read_text())
        assert ns_there != os.stat("/proc/self/ns/pid").st_ino
        assert (claimed / ".lock").stat().st_nlink == 2  # the process's file under .clients

        # A new agent sweeps the staging area when it starts: the orphan of its own namespace
        # goes, the directory of the live client of the other namespace stays (before, its pid,
        # 1 or 2 there, named this machine's init or nothing here: the copies were deleted).
        client.stop_agents()
        dead = orphan_of_this_namespace(staging, "dead-here")
        staging_dir(client)
        assert wait_for(lambda: not dead.exists(), timeout=30), agent_log(client)[-3000:]
        client.stop_agents()  # its sweep is over: it judged both directories
        assert (claimed / "0").read_text() == "a staged copy", agent_log(client)[-3000:]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)

    # The client ended (its lock is free): the next agent deletes the directory it left.
    client.stop_agents()
    staging_dir(client)
    assert wait_for(lambda: not claimed.exists(), timeout=30), agent_log(client)[-3000:]
    said = f"(pid {pid_there} in another PID namespace) ended before handing"
    assert wait_for(lambda: said in agent_log(client), timeout=30), agent_log(client)[-3000:]
