"""Downloading a large artifact file (docs/benchmarks.md, "Artifacts"): the SDK's
`cohort.Api().artifact(...).download(root)` (into the user's blob cache and into `root`,
verified) against `cohort artifact get` (into its directory, verified) and the disk's own read of
the file, all from the disk: the kernel's caches are dropped (root) before each, and the SDK's
blob cache is emptied, as on a node that restores a checkpoint it never had. One fresh server;
each repetition measures dd, the CLI and the SDK in turn. Loopback only.

Usage: /usr/bin/python3 bench/artifact_download_bench.py [REPEATS]   (SIZE_MB, default 2048;
BUILD_DIR as usual; the SDK imported is this tree's python/)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _bench_server import COHORT, BenchServer, write_random_file

SIZE_MB = int(os.environ.get("SIZE_MB", "2048"))
SDK = ("import sys, cohort\n"
       "cohort.Api().artifact('bench/big:latest').download(root=sys.argv[1], progress=False)\n")


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def timed(argv, env):
    drop_caches()
    t0 = time.time()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.time() - t0


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = f"{tmp}/weights.bin"
        write_random_file(data, SIZE_MB)
        with BenchServer(tmp) as srv:
            env = srv.env
            subprocess.run([str(COHORT), "artifact", "put", data, "--name", "big", "--type",
                            "model", "-p", "bench"], env=env, check=True, capture_output=True)
            for rep in range(repeats):
                row = {"dd": timed(["dd", f"if={data}", "of=/dev/null", "bs=8M", "status=none"],
                                   env)}
                out = f"{tmp}/cli"
                row["cli"] = timed([str(COHORT), "artifact", "get", "bench/big", "--root", out],
                                   env)
                same = subprocess.run(["cmp", "-s", data, f"{out}/weights.bin"]).returncode == 0
                shutil.rmtree(out)
                shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)  # a node without it
                out = f"{tmp}/sdk"
                row["sdk"] = timed([sys.executable, "-c", SDK, out], env)
                same = same and subprocess.run(["cmp", "-s", data, f"{out}/weights.bin"]
                                               ).returncode == 0
                shutil.rmtree(out)
                if not same:
                    sys.exit("downloaded bytes differ")
                rows.append(row)
                print(f"repetition {rep + 1}: " + ", ".join(
                    f"{k} {v:.2f} s ({SIZE_MB / v:.0f} MiB/s)" for k, v in row.items()),
                    file=sys.stderr)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    pct = {k: statistics.median(r["dd"] / r[k] * 100 for r in rows) for k in ("cli", "sdk")}
    print(f"| from the disk ({SIZE_MB} MiB, median of {len(rows)}) | time | MiB/s | of dd's read |")
    print("| --- | --- | --- | --- |")
    print(f"| dd read, caches dropped | {med['dd']:.2f} s | {SIZE_MB / med['dd']:.0f} | |")
    print(f"| `cohort artifact get` | {med['cli']:.2f} s | {SIZE_MB / med['cli']:.0f} | "
          f"{pct['cli']:.0f}% |")
    print(f"| SDK `download(root)` (cache + root) | {med['sdk']:.2f} s | "
          f"{SIZE_MB / med['sdk']:.0f} | {pct['sdk']:.0f}% |")


if __name__ == "__main__":
    main()
