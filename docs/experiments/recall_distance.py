"""Issue 17.6: path length O(1) (attention) vs O(n) (recurrence), on recalling a token seen k steps earlier.

Each sequence is k + 9 tokens: random values (0..15) with one marker token at a random position p in [0, 8);
the value right after the marker must be output at the last position (a query token), so the distance to
bridge is k + 7 - p, between k and k + 7. Attention can read it in one hop from any distance; a GRU/LSTM must
carry it through every step in between. Models of similar size (~100-115k parameters): an attnlab decoder
(2 layers, d_model 64, learned positions) and torch.nn.GRU / LSTM (one layer, hidden 160 / 136), trained
with attnlab's Trainer on the same batches, the same steps and settings. Accuracy on 2,048 held-out
sequences; CPU time of one training step (forward + backward, one thread, time.process_time) as k grows.

    python docs/experiments/recall_distance.py [--ks 8 32 128 --steps 1500 --seeds 0 1 --png docs/img/exp_recall.png]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import attnlab
from attnlab.training import Task

sys.path.insert(0, str(Path(__file__).parent))
from common import figure, seed_all, settings, train  # noqa: E402

VALUES, MARK, QUERY = 16, 16, 17  # tokens 0..15 are values


def recall_batch(k: int, batch: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    seq = torch.randint(0, VALUES, (batch, k + 9), generator=generator)  # (batch, k + 9)
    p = torch.randint(0, 8, (batch,), generator=generator)
    rows = torch.arange(batch)
    seq[rows, p] = MARK
    seq[:, -1] = QUERY
    return seq, seq[rows, p + 1]  # the value after the marker


class Transformer(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.net = attnlab.build_model(attnlab.ModelConfig(topology="decoder", vocab_size=18, d_model=64, n_heads=4,
                                                           d_ff=256, n_layers=2, max_len=k + 9))

    def forward(self, ids):  # (batch, seq) -> (batch, vocab) at the query position
        return self.net(ids).logits[:, -1]


class Recurrent(nn.Module):
    def __init__(self, cell: str, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(18, 64)
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(64, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 18)

    def forward(self, ids):
        out, _ = self.rnn(self.embed(ids))  # (batch, seq, hidden)
        return self.head(out[:, -1])


MODELS = {"transformer": Transformer, "GRU": lambda k: Recurrent("gru", 160), "LSTM": lambda k: Recurrent("lstm", 136)}


class RecallTask(Task):
    def __init__(self, model: nn.Module, k: int):
        self.model, self.k = model, k
        self.test = recall_batch(k, 2048, torch.Generator().manual_seed(12345))

    def train_batch(self, generator, batch_size):
        ids, target = recall_batch(self.k, batch_size, generator)
        return {"ids": ids, "target": target}

    def loss(self, model, batch):
        return F.cross_entropy(model(batch["ids"]), batch["target"]), len(batch["target"])

    def evaluate(self, model):
        ids, target = self.test
        return {"accuracy": float((model(ids).argmax(-1) == target).float().mean())}


def step_seconds(model: nn.Module, k: int, repeats: int = 10) -> float:
    """Median CPU time of one forward + backward on a batch of 32."""
    ids, target = recall_batch(k, 32, torch.Generator().manual_seed(0))
    times = []
    for _ in range(repeats + 1):
        start = time.process_time()
        F.cross_entropy(model(ids), target).backward()
        times.append(time.process_time() - start)
    return sorted(times[1:])[repeats // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ks", type=int, nargs="+", default=[8, 32, 128])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--png", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    results = []
    for k in args.ks:
        for name in args.models:
            seed_all(0)
            probe = MODELS[name](k)
            cpu = step_seconds(probe, k)
            for seed in args.seeds:
                seed_all(seed)
                model = MODELS[name](k)
                s, _ = settings(steps=args.steps, batch_size=32, lr=2e-3, warmup=100, weight_decay=0.0,
                                eval_every=max(1, args.steps // 5), seed=seed)
                history = train(RecallTask(model, k), s)
                row = {"k": k, "model": name, "seed": seed, "params": sum(p.numel() for p in model.parameters()),
                       "cpu_s_per_step": cpu, "accuracy": [(r["step"], r["eval_accuracy"]) for r in history
                                                           if "eval_accuracy" in r],
                       "final_train_loss": history[-1]["loss"]}
                results.append(row)
                print(json.dumps(row), flush=True)

    if args.png:
        fig, (left, right) = figure(9.5, 3.4, ncols=2)
        for i, name in enumerate(args.models):
            rows = [r for r in results if r["model"] == name]
            for seed in args.seeds:
                pts = [(r["k"], r["accuracy"][-1][1]) for r in rows if r["seed"] == seed]
                left.plot(*zip(*pts, strict=True), "o-", color=f"C{i}", alpha=0.8,
                          label=name if seed == args.seeds[0] else None)
            cpu = sorted({(r["k"], r["cpu_s_per_step"]) for r in rows})
            right.plot([c[0] for c in cpu], [c[1] * 1e3 for c in cpu], "o-", color=f"C{i}", label=name)
        left.axhline(1 / VALUES, color="grey", ls=":", label="chance")
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("distance k")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        left.set_ylabel(f"held-out accuracy after {args.steps} steps")
        right.set_ylabel("CPU ms per training step (batch 32)")
        fig.tight_layout()
        fig.savefig(args.png)


if __name__ == "__main__":
    main()
