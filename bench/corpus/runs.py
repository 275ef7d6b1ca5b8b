"""The training runs of the metrics corpus (bench/README.md, "Metrics corpus"; issue 22).

Each run is a real training of a small model with Debian's torch on data that ships with a
package or with this repository, logged through the Cohort SDK (`import cohort as wandb`) the
way everyday scripts log: per-step train metrics, per-epoch or periodic evaluation, the agent's
system metrics. `make_corpus.py` runs them as separate processes against a private server:

    python bench/corpus/runs.py digits-mlp --seed 1 --lr 0.05
    python bench/corpus/runs.py digits-cnn
    python bench/corpus/runs.py chars-gru
    python bench/corpus/runs.py hf-trainer

The server, key and project come from COHORT_BASE_URL, COHORT_API_KEY and COHORT_PROJECT.
"""
import argparse
import math
import pathlib
import time

import torch
import torch.nn.functional as F
from torch import nn

import cohort as wandb

ROOT = pathlib.Path(__file__).resolve().parents[2]
STATS_INTERVAL_S = 1.0  # the agent's system metrics, sampled every second (the default is 15)


def init(name, config):
    torch.set_num_threads(1)  # the 2-core machine this ran on; keeps runs comparable
    return wandb.init(name=name, config=config,
                      settings=wandb.Settings(x_stats_sampling_interval=STATS_INTERVAL_S,
                                              console="off"))


def digits_split(seed):
    """scikit-learn's bundled 8x8 digits (1,797 images): 80% train, 20% test."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(x), generator=g)
    n_train = int(0.8 * len(x))
    return (x[perm[:n_train]], y[perm[:n_train]]), (x[perm[n_train:]], y[perm[n_train:]])


def batches(x, y, size, gen):
    perm = torch.randperm(len(x), generator=gen)
    for i in range(0, len(x), size):
        idx = perm[i:i + size]
        yield x[idx], y[idx]


def digits_mlp(args):
    """The PyTorch MNIST example's loop on digits: an MLP, SGD with momentum, StepLR; logs
    loss/lr/epoch per step, test loss and accuracy (in percent) per epoch."""
    torch.manual_seed(args.seed)
    (xt, yt), (xv, yv) = digits_split(args.seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 64),
                          nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    run = init(f"digits-mlp-s{args.seed}", {"model": "mlp", "lr": args.lr, "batch_size": 32,
                                            "epochs": args.epochs, "seed": args.seed})
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for data, target in batches(xt, yt, 32, gen):
            opt.zero_grad()
            out = model(data)
            loss = F.cross_entropy(out, target)
            loss.backward()
            opt.step()
            correct = (out.argmax(1) == target).sum().item()
            run.log({"train/loss": loss.item(), "train/acc": correct / len(target),
                     "lr": sched.get_last_lr()[0], "epoch": epoch})
        sched.step()
        model.eval()
        with torch.no_grad():
            out = model(xv)
            test_loss = F.cross_entropy(out, yv, reduction="sum").item() / len(xv)
            correct = (out.argmax(1) == yv).sum().item()
        run.log({"test/loss": test_loss, "test/accuracy": 100. * correct / len(xv)},
                commit=False)
    run.finish()


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x.view(-1, 1, 8, 8))), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def digits_cnn(args):
    """A CNN on digits with AdamW, warm-up then cosine, gradient clipping; logs what a tuned
    script logs: rounded accuracies, grad norm, step time and throughput, weight norm."""
    torch.manual_seed(args.seed)
    (xt, yt), (xv, yv) = digits_split(args.seed)
    model = SmallCnn()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    steps_per_epoch = math.ceil(len(xt) / 64)
    total = args.epochs * steps_per_epoch
    warmup = 200
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / total)))
    run = init(f"digits-cnn-s{args.seed}", {"model": "cnn", "batch_size": 64,
                                            "epochs": args.epochs, "warmup": warmup})
    gen = torch.Generator().manual_seed(args.seed)
    step = 0
    for epoch in range(args.epochs):
        model.train()
        for data, target in batches(xt, yt, 64, gen):
            t0 = time.perf_counter()
            opt.zero_grad()
            out = model(data)
            loss = F.cross_entropy(out, target)
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            dt = time.perf_counter() - t0
            acc = (out.argmax(1) == target).float().mean().item()
            step += 1
            metrics = {"train/loss": loss.item(), "train/acc": round(acc, 4),
                       "train/grad_norm": grad_norm.item(), "train/lr": opt.param_groups[0]["lr"],
                       "perf/step_ms": dt * 1000, "perf/samples_per_s": len(target) / dt,
                       "epoch": step / steps_per_epoch}
            if step % 10 == 0:
                metrics["train/weight_norm"] = torch.sqrt(
                    sum((p.detach() ** 2).sum() for p in model.parameters())).item()
            run.log(metrics, step=step)
        model.eval()
        with torch.no_grad():
            out = model(xv)
            probs = out.softmax(1)
            val = {"val/loss": F.cross_entropy(out, yv).item(),
                   "val/acc": round((out.argmax(1) == yv).float().mean().item(), 4),
                   "val/top2": round((out.topk(2, 1).indices == yv[:, None]).any(1)
                                     .float().mean().item(), 4),
                   "val/confidence": probs.max(1).values.mean().item()}
        run.log(val, commit=False)  # joins the next step's row
    run.summary["best_val_acc"] = val["val/acc"]
    run.finish()


def docs_text():
    """The text the character models learn: this repository's own documentation."""
    parts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    parts.append((ROOT / "README.md").read_text(encoding="utf-8"))
    return "\n".join(parts)


def char_data():
    text = docs_text()
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    n_val = len(ids) // 10
    return vocab, ids[:-n_val], ids[-n_val:]


class CharGru(nn.Module):
    def __init__(self, vocab, dim=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def chars_gru(args):
    """A character-level GRU language model on the repository's docs: AdamW, linear warm-up and
    cosine decay; logs loss, bits per character, perplexity, grad norm, lr, tokens/s, and an
    evaluation every 100 steps."""
    torch.manual_seed(args.seed)
    seq, bs = 64, 32
    vocab, train_ids, val_ids = char_data()
    model = CharGru(len(vocab))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    warmup = 100
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(
            math.pi * min(s, args.steps) / args.steps))))
    run = init(f"chars-gru-s{args.seed}", {"model": "gru", "dim": 128, "seq_len": seq,
                                           "batch_size": bs, "steps": args.steps,
                                           "vocab": len(vocab)})
    gen = torch.Generator().manual_seed(args.seed)
    tokens = 0
    t_last = time.perf_counter()
    for step in range(1, args.steps + 1):
        starts = torch.randint(0, len(train_ids) - seq - 1, (bs,), generator=gen)
        x = torch.stack([train_ids[s:s + seq] for s in starts])
        y = torch.stack([train_ids[s + 1:s + seq + 1] for s in starts])
        loss = F.cross_entropy(model(x).reshape(-1, len(vocab)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        opt.step()
        sched.step()
        tokens += bs * seq
        now = time.perf_counter()
        lv = loss.item()
        run.log({"loss": lv, "bpc": lv / math.log(2), "perplexity": math.exp(lv),
                 "grad_norm": grad_norm, "lr": sched.get_last_lr()[0],
                 "tokens_per_s": bs * seq / (now - t_last), "tokens": tokens}, step=step)
        t_last = now
        if step % 100 == 0:
            model.eval()
            with torch.no_grad():
                n = (len(val_ids) - 1) // seq * seq
                vx = val_ids[:n].view(-1, seq)[:64]
                vy = val_ids[1:n + 1].view(-1, seq)[:64]
                vl = F.cross_entropy(model(vx).reshape(-1, len(vocab)), vy.reshape(-1)).item()
            model.train()
            run.log({"val/loss": vl, "val/bpc": round(vl / math.log(2), 3)}, commit=False)
    run.finish()


def hf_trainer(args):
    """A real transformers Trainer run: a 2-layer GPT-2 built from a config (no download) on
    the docs' characters, logging every step and evaluating every 50, through the stock
    WandbCallback pointed at the Cohort SDK (what `report_to="wandb"` does with
    `import cohort as wandb`)."""
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
    from transformers.integrations import WandbCallback
    torch.manual_seed(args.seed)
    seq = 64
    vocab, train_ids, val_ids = char_data()

    class Blocks(torch.utils.data.Dataset):
        def __init__(self, ids, stride):
            self.ids, self.stride = ids, stride
            self.n = (len(ids) - seq) // stride

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            x = self.ids[i * self.stride:i * self.stride + seq]
            return {"input_ids": x, "labels": x}

    config = GPT2Config(vocab_size=len(vocab), n_positions=seq, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(config)
    out = pathlib.Path(args.out) if args.out else pathlib.Path("/tmp/cohort-corpus-hf")
    targs = TrainingArguments(
        output_dir=str(out), max_steps=args.steps, per_device_train_batch_size=16,
        per_device_eval_batch_size=32, learning_rate=1e-3, warmup_ratio=0.05,
        lr_scheduler_type="cosine", weight_decay=0.01, logging_steps=1, evaluation_strategy="steps",
        eval_steps=50, save_strategy="no", report_to=[], use_cpu=True, seed=args.seed,
        run_name=f"hf-gpt2-chars-s{args.seed}", dataloader_num_workers=0, disable_tqdm=True)

    class CohortRun:
        """wandb.run as the stock callback uses it, on the Cohort SDK's run."""

        def __getattr__(self, name):
            return getattr(wandb.run, name)

        def _label(self, **kwargs):
            pass

    class CohortModule:
        """The `wandb` module as the stock callback uses it: the Cohort SDK."""

        def __getattr__(self, name):
            return getattr(wandb, name)

        @property
        def run(self):
            return CohortRun() if wandb.run is not None else None

    class CohortCallback(WandbCallback):
        def __init__(self):
            super().__init__()
            self._wandb = CohortModule()

    init(targs.run_name, {"model": "gpt2-tiny", "steps": args.steps})
    trainer = Trainer(model=model, args=targs, train_dataset=Blocks(train_ids, 16),
                      eval_dataset=Blocks(val_ids, seq), callbacks=[CohortCallback()])
    torch.set_num_threads(1)
    trainer.train()
    wandb.finish()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", choices=["digits-mlp", "digits-cnn", "chars-gru", "hf-trainer"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--out", default="")
    a = p.parse_args()
    {"digits-mlp": digits_mlp, "digits-cnn": digits_cnn, "chars-gru": chars_gru,
     "hf-trainer": hf_trainer}[a.run](a)


if __name__ == "__main__":
    main()
