"""The SDK's artifact path (docs/benchmarks.md, "Artifacts"): a training process logs a SIZE_MB
file with `run.log_artifact` (hashed and staged off the training thread, handed to the node
agent, uploaded in the background), waits for the version, then logs the unchanged file again;
against the disk's own write bandwidth (dd with fdatasync) in the same run. Peak RSS of the
agent and the server (VmHWM). A fresh server per repetition, loopback only.

The peer, when $COHORT_WANDB_PYTHON names a Python with the vendor SDK (`wandb`) installed: the
same file logged with `wandb.Artifact.add_file` + `run.log_artifact` + `run.finish()` in
`mode="offline"` (what it does locally: it hashes the file and copies it into its staging
directory; nothing is uploaded until `wandb sync`), timed, and the bytes it left on disk.

Usage: /usr/bin/python3 bench/artifact_sdk_bench.py [REPEATS]   (SIZE_MB, default 2048)
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from _bench_server import BenchServer, write_random_file

SIZE_MB = int(os.environ.get("SIZE_MB", "2048"))

SCRIPT = r"""
import json, sys, time
import cohort
path = sys.argv[1]
run = cohort.init(project="bench", settings=cohort.Settings(finish_timeout=600))
t0 = time.time()
art = cohort.Artifact("big", "model")
art.add_file(path, "weights.bin")
run.log_artifact(art)
t1 = time.time()
art._thread.join()  # hashed and copied into the agent's staging directory, handed over
t_staged = time.time()
art.wait(timeout=600)
t2 = time.time()
again = cohort.Artifact("big", "model")
again.add_file(path, "weights.bin")
run.log_artifact(again)
again.wait(timeout=600)
t3 = time.time()
run.finish()
print(json.dumps({"log_call_s": t1 - t0, "staged_s": t_staged - t0, "committed_s": t2 - t0,
                  "relog_s": t3 - t2,
                  "version": art.version, "again": again.version}))
"""


WANDB_SCRIPT = r"""
import json, sys, time
import wandb
run = wandb.init(project="bench", mode="offline")
t0 = time.time()
art = wandb.Artifact("big", "model")
art.add_file(sys.argv[1], "weights.bin")
t1 = time.time()
run.log_artifact(art)
t2 = time.time()
run.finish()
t3 = time.time()
print(json.dumps({"add_file_s": t1 - t0, "log_call_s": t2 - t1, "total_s": t3 - t0}))
"""


def du_bytes(path):
    total = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_blocks * 512
            except OSError:
                continue
    return total


def peer(tmp, data_file):
    """The vendor SDK's offline log_artifact of the same file; None without $COHORT_WANDB_PYTHON."""
    python = os.environ.get("COHORT_WANDB_PYTHON")
    if not python:
        return None
    home = pathlib.Path(tmp) / "wandb-home"
    (home / "runs").mkdir(parents=True)
    env = dict(os.environ, HOME=str(home), WANDB_DIR=str(home / "runs"), WANDB_SILENT="true",
               XDG_CACHE_HOME=str(home / "cache"), XDG_DATA_HOME=str(home / "share"),
               XDG_CONFIG_HOME=str(home / "config"))
    script = pathlib.Path(tmp) / "wandb_log.py"
    script.write_text(WANDB_SCRIPT)
    os.sync()
    out = subprocess.run([python, str(script), data_file], env=env, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["disk_bytes"] = du_bytes(home)
    return row


def hwm_mb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None


def one(tmp, data_file):
    # Each measured step starts with a sync: the previous step's bytes still being written back
    # would otherwise weigh on it.
    os.sync()
    t0 = time.time()
    subprocess.run(["dd", f"if={data_file}", f"of={tmp}/copy", "bs=8M", "conv=fdatasync",
                    "status=none"], check=True)
    disk_mbs = SIZE_MB / (time.time() - t0)
    os.remove(f"{tmp}/copy")
    with BenchServer(tmp) as srv:
        os.sync()
        proc = srv.start_script(SCRIPT, data_file, python="/usr/bin/python3")
        agent_peak = 0.0
        while proc.poll() is None:
            out = subprocess.run(["pgrep", "-f", "^cohort agent"], capture_output=True,
                                 text=True).stdout.split()
            for pid in out:
                try:  # this run's agent: the one with this HOME
                    environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
                except OSError:
                    continue
                if f"HOME={srv.home}".encode() in environ:
                    agent_peak = max(agent_peak, hwm_mb(int(pid)) or 0)
            time.sleep(0.2)
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(stderr[-3000:])
        row = json.loads(stdout.strip().splitlines()[-1])
        row.update(disk_write_mbs=disk_mbs, upload_mbs=SIZE_MB / row["committed_s"],
                   agent_peak_mb=agent_peak, server_peak_mb=hwm_mb(srv.proc.pid))
    row["wandb"] = peer(tmp, data_file)
    return row


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows = []
    with tempfile.TemporaryDirectory() as base:
        data_file = f"{base}/weights.bin"
        write_random_file(data_file, SIZE_MB)
        for rep in range(repeats):
            tmp = f"{base}/rep{rep}"
            os.mkdir(tmp)
            rows.append(one(tmp, data_file))
            subprocess.run(["rm", "-rf", tmp])
            print(f"repetition {rep + 1}: {json.dumps(rows[-1])}", file=sys.stderr)
    med = lambda k: statistics.median(r[k] for r in rows)
    print(f"| SDK path ({SIZE_MB} MiB, median of {len(rows)}) | value |")
    print("| --- | --- |")
    print(f"| disk write, dd with fdatasync | {med('disk_write_mbs'):.0f} MiB/s |")
    print(f"| `run.log_artifact` returns | {med('log_call_s') * 1000:.1f} ms |")
    print(f"| hashed and copied into staging (off the training thread) | {med('staged_s'):.1f} s |")
    print(f"| logged to committed (hash + stage, agent upload, commit) | {med('committed_s'):.1f} s, "
          f"{med('upload_mbs'):.0f} MiB/s, {100 * med('upload_mbs') / med('disk_write_mbs'):.0f}% of disk write |")
    print(f"| log the unchanged file again, to committed | {med('relog_s'):.2f} s "
          f"(version {rows[-1]['again']}, same as {rows[-1]['version']}) |")
    print(f"| peak RSS: agent / server | {med('agent_peak_mb'):.0f} / {med('server_peak_mb'):.0f} MiB |")
    peers = [r["wandb"] for r in rows if r.get("wandb")]
    if peers:
        pm = lambda k: statistics.median(p[k] for p in peers)
        print(f"| vendor SDK offline: `add_file` (hash + staging copy) | {pm('add_file_s'):.1f} s |")
        print(f"| vendor SDK offline: `log_artifact` returns | {pm('log_call_s') * 1000:.1f} ms |")
        print(f"| vendor SDK offline: add_file to `finish()` returned | {pm('total_s'):.1f} s, "
              f"{pm('disk_bytes') / 2**20:.0f} MiB left on disk (nothing uploaded) |")
    else:
        print("| vendor SDK offline | not measured: set COHORT_WANDB_PYTHON to a Python with wandb |")


if __name__ == "__main__":
    main()
