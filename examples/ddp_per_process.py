"""Scenario 2 of the seed: track each process separately, one run per process.

Every rank starts its own run in the group "DDP" (the UI groups them); rank 0 is the "main"
job, the others "worker". Each run is finished explicitly so every process exits cleanly.

    python examples/launch.py --nproc 3 examples/ddp_per_process.py --project demo
"""
import cohort as wandb

from ddp_common import cleanup, init_distributed, parse_args, train


def extra(p):
    p.add_argument("--group", default="DDP")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], extra)
    rank, world_size = init_distributed()
    settings = None
    if args.stats_interval is not None:
        settings = wandb.Settings(x_stats_sampling_interval=args.stats_interval)
    # Initialise the run
    run = wandb.init(
        entity=args.entity,
        project=args.project,
        group=args.group,  # every run of the experiment in one group
        job_type="main" if rank == 0 else "worker",
        name=f"{args.group}-rank{rank}",
        config={"rank": rank, "world_size": world_size, "lr": args.lr},
        settings=settings,
    )
    # Train the model with DDP
    loss = train(args, run, rank)
    run.summary["final_loss"] = loss
    print(f"rank {rank}: final loss {loss:.4f} (run {run.id})", flush=True)
    run.finish()  # mark the run finished
    cleanup()


if __name__ == "__main__":
    main()
