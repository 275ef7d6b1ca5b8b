"""Scenario 1 of the seed: track one process (rank 0).

Only rank 0 calls init() and logs; the other ranks train without tracking. The run still gets
the system metrics of the whole machine (every GPU, the CPU), sampled by the node agent.

    python examples/launch.py --nproc 2 examples/ddp_rank0.py --project demo
"""
import cohort as wandb  # the seed's scripts run unchanged with this one line

from ddp_common import cleanup, init_distributed, parse_args, train


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    rank, world_size = init_distributed()
    settings = None
    if args.stats_interval is not None:
        settings = wandb.Settings(x_stats_sampling_interval=args.stats_interval)

    if args.local_rank == 0:  # only on the main process
        # Initialise the run
        run = wandb.init(
            entity=args.entity,
            project=args.project,
            config={"world_size": world_size, "lr": args.lr},
            settings=settings,
        )
        # Train the model with DDP
        loss = train(args, run, rank)
        print(f"rank {rank}: final loss {loss:.4f} (run {run.id})", flush=True)
    else:
        train(args, rank=rank)
    cleanup()
    # No finish() here, as in the seed's snippet: the run finishes when the process exits.


if __name__ == "__main__":
    main()
