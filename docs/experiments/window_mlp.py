"""Seed 003: the MLP over a window of concatenated token embeddings, the baseline attention replaces.

The seed's path from MLPs to attention: an MLP sees one token; concatenating the embeddings of nearby tokens
gives it context, but the window must be large enough to cover the input, cannot vary in length, and costs many
parameters. This script trains, on the gpt-char recipe (windows of 64 characters, every position scored on the
character after it), a small causal transformer (2 layers, d_model 64, 4 heads, d_ff 256: 110,848 parameters)
against a Bengio-style window MLP at the same parameter budget: position t sees the embeddings (width 32) of
its own character and the w - 1 before it, concatenated, then one hidden GELU layer and a linear read-out to the
vocabulary; positions before the window's start read a learned padding embedding (the transformer's first
positions also see less context). The hidden width is the largest that keeps the MLP within the transformer's
parameter count, so a longer window buys context with a narrower hidden layer: w 4, 16, 64 (64 = everything
the transformer can see). Both go through attnlab's Trainer with the recipe's settings (batch 12, AdamW,
warmup, cosine), the same steps, and the same protocol (heldout.py): learning rate chosen on the validation
half with one tuning seed, then seeds 0, 1, 2 scored on the test half.

    python docs/experiments/window_mlp.py --jsonl docs/experiments/results/window_mlp.jsonl
    python docs/experiments/window_mlp.py --windows 4 --steps 2000 --lr 1e-2 --seeds 0 \
        --jsonl docs/experiments/results/window_mlp_2000.jsonl   # one longer probe at the tuned rate
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import attnlab

sys.path.insert(0, str(Path(__file__).parent))
from common import recipe_task, seed_all  # noqa: E402
from heldout import protocol_arguments, sweep_as_asked  # noqa: E402

TRANSFORMER = {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256}
D_EMBED = 32


class WindowMLP(nn.Module):
    """Next-character logits at every position from the concatenated embeddings of the last `window` ids."""

    def __init__(self, vocab_size: int, window: int, d_embed: int, hidden: int):
        super().__init__()
        self.window, self.pad = window, vocab_size  # id vocab_size: "before the start of the input"
        self.embed = nn.Embedding(vocab_size + 1, d_embed)
        self.hidden = nn.Linear(window * d_embed, hidden)
        self.out = nn.Linear(hidden, vocab_size)
        self.describe = {"hidden": hidden}  # added to the run's JSON line (heldout.run)

    def forward(self, ids: torch.Tensor) -> attnlab.ModelOutput:  # (batch, seq) -> logits (batch, seq, vocab)
        padded = F.pad(ids, (self.window - 1, 0), value=self.pad)  # (batch, seq + window - 1)
        context = padded.unfold(1, self.window, 1)  # (batch, seq, window): ids t - window + 1 .. t
        x = self.embed(context).flatten(2)  # (batch, seq, window * d_embed)
        return attnlab.ModelOutput(logits=self.out(F.gelu(self.hidden(x))))


def mlp_params(vocab_size: int, window: int, hidden: int) -> int:
    return (vocab_size + 1) * D_EMBED + (window * D_EMBED + 1) * hidden + (hidden + 1) * vocab_size


def widest_hidden(vocab_size: int, window: int, budget: int) -> int:
    """The largest hidden width whose MLP has at most `budget` parameters."""
    hidden = 1
    while mlp_params(vocab_size, window, hidden + 1) <= budget:
        hidden += 1
    return hidden


def builder(window: int | None, out: str):
    """window None: the transformer; else the window MLP at the transformer's parameter count."""
    def build(lr: float, seed: int, steps: int):
        task, s = recipe_task("gpt-char", out, **TRANSFORMER, lr=lr, steps=steps, eval_every=steps, seed=seed)
        if window is not None:
            budget = task.model.num_parameters()
            vocab = task.tokenizer.vocab_size
            seed_all(seed)  # the MLP's initial weights depend on the seed, as the transformer's do
            task.model = WindowMLP(vocab, window, D_EMBED, widest_hidden(vocab, window, budget))
            task.flops_per_item = lambda: None  # the recipe's FLOP count is for its transformer config
        return task, s
    return build


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, nargs="+", default=[4, 16, 64])
    args = protocol_arguments(ap, "/tmp/exp26/window_mlp")
    arms = [({"model": "transformer", **TRANSFORMER}, builder(None, args.out))]
    arms += [({"model": "window MLP", "window": w, "d_embed": D_EMBED}, builder(w, args.out)) for w in args.windows]
    sweep_as_asked(arms, args)


if __name__ == "__main__":
    main()
