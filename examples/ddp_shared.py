"""Scenario 3 of the seed: track all processes in one run (shared mode).

Rank 0 is the primary: it creates the run and owns its config and state. Every other rank
joins the primary's run id as a worker with its own label (rank_N) and
x_update_finish_state=False, so it never ends the run early. Metrics, console lines and system
metrics of every rank land in one run, tagged by label.

    python examples/launch.py --nproc 4 examples/ddp_shared.py --project demo

The primary's run id reaches the workers through torch.distributed here; under torchrun (or
examples/launch.py) ``--auto`` shows the other way: every rank calls
init(settings=Settings(mode="shared")) and the id, label and primary flag come from the
environment (TORCHELASTIC_RUN_ID, RANK).
"""
import os
import signal
import time

import torch
import torch.distributed as dist

import cohort as wandb

from ddp_common import cleanup, init_distributed, parse_args, train


def extra(p):
    p.add_argument("--auto", action="store_true",
                   help="let labels, primary and run id default from torchrun's environment")
    p.add_argument("--crash-rank", type=int, default=None,
                   help="this rank kills itself with SIGKILL after training (fault demo)")
    p.add_argument("--hold-file", default=None,
                   help="after training, surviving ranks log eval points until this file is "
                        "removed (lets a test look at the run while it goes on)")
    p.add_argument("--eval-steps", type=int, default=5)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], extra)
    rank, world_size = init_distributed()
    stats = {}
    if args.stats_interval is not None:
        stats["x_stats_sampling_interval"] = args.stats_interval
    gpus = list(range(torch.cuda.device_count())) or None

    if args.auto:
        run = wandb.init(entity=args.entity, project=args.project,
                         config={"world_size": world_size} if rank == 0 else None,
                         settings=wandb.Settings(mode="shared", **stats))
    elif rank == 0:
        # Initialise a run on the primary node
        run = wandb.init(
            entity=args.entity,
            project=args.project,
            config={"world_size": world_size, "lr": args.lr},
            settings=wandb.Settings(
                x_label="rank_0",
                mode="shared",
                x_primary=True,
                x_stats_gpu_device_ids=gpus,  # optional: only these GPUs
                **stats,
            ),
        )
        # Each worker needs the primary's run id.
        dist.broadcast_object_list([run.id], src=0)
    else:
        holder = [None]
        dist.broadcast_object_list(holder, src=0)
        run_id = holder[0]
        # Initialise a run on a worker node with the primary's run id
        run = wandb.init(
            entity=args.entity,  # the same entity as the primary
            project=args.project,  # the same project as the primary
            settings=wandb.Settings(x_label=f"rank_{rank}", mode="shared", x_primary=False,
                                    x_update_finish_state=False, **stats),
            id=run_id,
        )

    print(f"rank {rank}: writing to run {run.id} as {run.label}", flush=True)
    loss = train(args, run, rank)
    print(f"rank {rank}: final loss {loss:.4f}", flush=True)

    if args.crash_rank == rank:
        time.sleep(0.5)  # what was logged reaches the agent; then die without finish()
        os.kill(os.getpid(), signal.SIGKILL)

    # No collective calls from here on: a crashed rank must not block the others.
    for i in range(args.eval_steps):
        run.log({"eval/score": float(rank * 100 + i)})
    if args.hold_file:
        while os.path.exists(args.hold_file):
            run.log({"eval/waiting": 1.0})
            time.sleep(0.1)
    if rank == 0:
        run.summary["final_loss"] = loss
    run.finish()
    # Without a collective here either: the group is torn down per process.
    if args.crash_rank is None:
        cleanup()


if __name__ == "__main__":
    main()
