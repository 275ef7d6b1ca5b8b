"""Seed example "child process": setup() in the parent, then a multiprocessing.Pool whose
children each start their own run.

setup() starts the node agent once, so that the four children connect to it at once instead of
each racing to start one.

    python examples/pool_setup.py --project demo
"""
import argparse
import multiprocessing as mp
import os

import cohort as wandb


def do_work(n):
    with wandb.init(config=dict(n=n)) as run:
        run.log(dict(this=n * n))


def main():
    wandb.setup()
    pool = mp.Pool(processes=4)
    pool.map(do_work, range(4))
    pool.close()
    pool.join()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--project", default="cohort-examples")
    p.add_argument("--start-method", default=None, choices=["fork", "spawn", "forkserver"])
    a = p.parse_args()
    os.environ["COHORT_PROJECT"] = a.project  # children inherit it, whatever the start method
    if a.start_method:
        mp.set_start_method(a.start_method)
    main()
