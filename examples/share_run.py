"""Seed example "share a run": pass a run object to a child process.

The child logs to the same run as a writer of its own (label "<parent label>-<child pid>"); it
never ends the run, which stays the parent's to finish. The order of log calls across
processes is the script's to synchronise (steps count per writer, so nothing is overwritten).

    python examples/share_run.py --project demo [--start-method spawn]
"""
import argparse
import multiprocessing as mp
import os

import cohort as wandb


def do_work(run):
    with wandb.init() as run:
        run.log(dict(this=1))


def main():
    run = wandb.init()
    p = mp.Process(target=do_work, kwargs=dict(run=run))
    p.start()
    p.join()
    run.log(dict(parent=1))
    print(f"run {run.id}: child exit code {p.exitcode}", flush=True)
    run.finish()  # mark the run finished


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="cohort-examples")
    parser.add_argument("--start-method", default=None, choices=["fork", "spawn", "forkserver"])
    a = parser.parse_args()
    os.environ["COHORT_PROJECT"] = a.project  # children inherit it, whatever the start method
    if a.start_method:
        mp.set_start_method(a.start_method)
    main()
