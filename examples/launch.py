#!/usr/bin/env python3
"""Starts N ranks of a torch.distributed script on this machine, like ``torchrun --standalone``.

    python examples/launch.py --nproc 4 examples/ddp_shared.py --project demo

Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, a free MASTER_PORT
and a TORCHELASTIC_RUN_ID shared by the job (as torchrun sets it), so that shared-mode runs
agree on one run id without talking to each other. Debian's torchrun crashes on Python 3.11
unless given ``--redirects 9:0 --tee 9:0``; this launcher avoids it altogether.

When a rank fails, the others are terminated (SIGTERM, then SIGKILL after ``--grace``) and the
launcher exits with the first failing rank's status, as torchrun does. With ``--keep-going``
the other ranks run on (used to show a crashed rank inside a shared run).
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from typing import List, Optional


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(rank: int, nproc: int, port: int, run_id: str) -> dict:
    env = dict(os.environ)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0",
        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": run_id,
    })
    return env


def exit_status(code: int) -> int:
    """A Popen return code as a shell exit status (a signal N becomes 128 + N)."""
    return 128 - code if code < 0 else code


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", type=int, default=2)
    p.add_argument("--run-id", default=None, help="TORCHELASTIC_RUN_ID (default: random)")
    p.add_argument("--grace", type=float, default=5.0,
                   help="seconds between SIGTERM and SIGKILL when stopping ranks")
    p.add_argument("--keep-going", action="store_true",
                   help="do not stop the other ranks when one fails")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)

    port = free_port()
    run_id = a.run_id or uuid.uuid4().hex[:12]
    procs = [subprocess.Popen([sys.executable, a.script, *a.args],
                              env=rank_env(r, a.nproc, port, run_id))
             for r in range(a.nproc)]
    status = 0
    stopping = False

    def stop_all(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for q in procs:
            if q.poll() is None:
                q.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    deadline = None
    while any(q.poll() is None for q in procs):
        for r, q in enumerate(procs):
            code = q.poll()
            if code is not None and code != 0 and status == 0:
                status = exit_status(code)
                print(f"launch: rank {r} exited with status {status}", file=sys.stderr)
                if not a.keep_going:
                    stop_all()
        if stopping and deadline is None:
            deadline = time.monotonic() + a.grace
        if deadline is not None and time.monotonic() > deadline:
            for q in procs:
                if q.poll() is None:
                    q.kill()
        time.sleep(0.05)
    for r, q in enumerate(procs):
        if q.returncode != 0 and status == 0:
            status = exit_status(q.returncode)
    return status


if __name__ == "__main__":
    sys.exit(main())
