"""Shared pieces of the DDP examples: command-line arguments, process group, a tiny model.

Everything runs on CPU with the gloo backend, so each example finishes in a few seconds with
2-4 ranks on a laptop. Start the ranks with ``examples/launch.py`` (or torchrun).
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Iterator, Optional, Tuple

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args(description: str, extra: Optional[callable] = None) -> argparse.Namespace:
    """Arguments common to the examples (plus ``--local_rank``, as torch.distributed.launch
    passes it)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--entity", default=None, help="entity (default: the API key's)")
    p.add_argument("--project", default="cohort-examples")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=10, help="batches per epoch")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--stats-interval", type=float, default=None,
                   help="system metrics period in seconds (default 15)")
    p.add_argument("--step-time", type=float, default=0.0,
                   help="extra seconds per step, to stand for real work")
    p.add_argument("--watch-freq", type=int, default=0,
                   help="log gradient and parameter histograms every N steps (run.watch)")
    p.add_argument("--log-images", action="store_true",
                   help="log the first layer's weights as an image at the last step of each epoch")
    p.add_argument("--local_rank", "--local-rank", type=int,
                   default=int(os.environ.get("LOCAL_RANK", "0")))
    if extra is not None:
        extra(p)
    return p.parse_args()


def init_distributed() -> Tuple[int, int]:
    """Joins the gloo process group from torchrun's environment; returns (rank, world size)."""
    if not dist.is_initialized():
        dist.init_process_group(backend="gloo")
    return dist.get_rank(), dist.get_world_size()


class TinyNet(nn.Module):
    """A two-layer regression model: small enough to train in milliseconds."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def batches(rank: int, count: int, size: int) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
    """Deterministic synthetic data, different on every rank (y = sum of x plus noise)."""
    g = torch.Generator().manual_seed(1234 + rank)
    for _ in range(count):
        x = torch.randn(size, 8, generator=g)
        y = x.sum(dim=1, keepdim=True) + 0.1 * torch.randn(size, 1, generator=g)
        yield x, y


def train(args: argparse.Namespace, run=None, rank: int = 0, on_step=None) -> float:
    """Trains TinyNet with DDP; logs loss/epoch/batch to ``run`` when given. Returns the last
    loss. ``on_step(global_step)`` runs after each step (used to inject failures)."""
    torch.manual_seed(0)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    step = 0
    loss = torch.tensor(0.0)
    if run is not None and getattr(args, "watch_freq", 0):
        run.watch(model, log="all", log_freq=args.watch_freq)
    for epoch in range(args.epochs):
        for batch, (x, y) in enumerate(batches(rank + 1000 * epoch, args.batches,
                                              args.batch_size)):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            if run is not None:
                # A 0-d tensor is logged as is; no .item() needed.
                values = {"loss": loss.detach(), "epoch": epoch, "batch": batch}
                if getattr(args, "log_images", False) and batch == args.batches - 1:
                    import cohort
                    values["weights/layer1"] = cohort.Image(weights_image(model.module),
                                                            caption=f"epoch {epoch}")
                run.log(values)
            step += 1
            if args.step_time:
                time.sleep(args.step_time)
            if on_step is not None:
                on_step(step)
    return float(loss)


def weights_image(model: nn.Module) -> torch.Tensor:
    """The first layer's weights (16 x 8) as a grey uint8 image, each weight a 12 x 12 block:
    dark is negative, light positive (the Media tab shows how they change per epoch)."""
    w = next(model.parameters()).detach()
    scaled = ((w / (w.abs().max() + 1e-12)) * 127.5 + 127.5).clamp(0, 255).to(torch.uint8)
    return scaled.repeat_interleave(12, dim=0).repeat_interleave(12, dim=1)


def cleanup() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
