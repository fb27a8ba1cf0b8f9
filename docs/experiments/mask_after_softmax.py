"""What if the causal mask is applied after the softmax instead of before?

softmax over all keys, then the future keys' weights set to 0: each row keeps only the mass it gave to the
past and sums to less than 1. The row's denominator still holds exp(score) of every *future* key, so during
teacher-forced training each position's output depends on tokens it should not see: a leak. The usual val loss
(every position of a window, the future inside the window) can therefore look good while the model cannot
predict from a prefix alone. The honest measure scores only the last position of a window (it has no future
keys, so nothing leaks): `honest_loss` does that for windows cut to 8, 16 and 64 characters, for both models.

The changed attention is a subclass of attnlab's Attention put into a gpt-char model built by the recipe; the
library is unchanged. It also keeps, per query position, the mass the softmax put on future keys.

    python docs/experiments/mask_after_softmax.py --seeds 0 1 2 --png docs/img/exp_mask_after_softmax.png \
        --jsonl docs/experiments/results/mask_after_softmax.jsonl

    python docs/experiments/mask_after_softmax.py --baselines --jsonl docs/experiments/results/mask_after_softmax.jsonl

One JSON line per (arm, seed) run, appended to --jsonl as it finishes: the val curve over every position, the
last train loss, the honest last-position losses, and for the mask-after arm the future mass per layer and
position and the generated sample. --baselines adds (in seconds, no training) one line of count-based losses on
the same targets: add-one unigram and bigram models counted on the train split.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import attnlab
from attnlab.layers.attention import Attention
from attnlab.recording import active

sys.path.insert(0, str(Path(__file__).parent))
from common import evals, figure, honest_loss, keep, paired_arm, recipe_task, save_figure, swap_attention  # noqa: E402


class MaskAfterSoftmax(Attention):
    """Self-attention with the causal mask applied to the weights after the softmax (rows sum to < 1)."""

    future_mass: torch.Tensor | None = None  # (batch, heads, q) of the last forward

    def forward(self, x, *, bias=None, is_causal=False, rope=None, context=None, cache=None):
        if bias is not None or rope is not None or cache is not None or context is not None:
            raise ValueError("this experiment's attention handles a plain causal decoder only")
        batch, n, _ = x.shape
        q, k, v = self.qkv(x).split((self.q_width, self.kv_width, self.kv_width), dim=-1)
        q, k, v = self._heads(q, self.n_heads), self._heads(k, self.n_heads), self._heads(v, self.n_heads)
        rec = active()  # attnlab.record (the trainer's attention probe reads blocks.*.attn.weights)
        raw = (q @ k.transpose(-2, -1)) * self.scale  # (batch, heads, q, k), every key
        weights = (raw if rec is None else rec.keep(self, "raw_scores", raw, head_axis=1)).softmax(-1)
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)  # key after query
        self.future_mass = weights.masked_fill(~future, 0.0).sum(-1).detach()  # (batch, heads, q)
        kept = weights.masked_fill(future, 0.0)  # rows sum to < 1
        out = (kept if rec is None else rec.keep(self, "weights", kept, head_axis=1)) @ v  # (batch, heads, q, d_head)
        return self.out(out.transpose(1, 2).reshape(batch, n, self.q_width))


def mask_after_softmax(model) -> None:
    """Swap every block's attention for the subclass, keeping the weights."""
    swap_attention(model, MaskAfterSoftmax)


def baselines(task, lengths=(8, 16, 64)) -> dict:
    """Add-one unigram and bigram cross-entropies counted on the train split: the last position of the windows
    cut to each length (the honest measure's targets) and every position of the windows (the usual val loss's)."""
    train_ids, vocab = task.train_ids, task.tokenizer.vocab_size
    counts = torch.bincount(train_ids, minlength=vocab).double() + 1  # add-one
    unigram = counts.log() - counts.sum().log()  # (vocab,) log-probs
    pairs = torch.ones(vocab, vocab, dtype=torch.float64)  # add-one bigram counts (prev, next)
    pairs.view(-1).index_add_(0, train_ids[:-1] * vocab + train_ids[1:], torch.ones(len(train_ids) - 1).double())
    bigram = pairs.log() - pairs.sum(1, keepdim=True).log()  # (prev, next) log-probs
    windows = task.val_windows[:512]  # (512, 65)
    return {"baseline": "add-one counts on the train split",
            "unigram_last_position": {n: float(-unigram[windows[:, n]].mean()) for n in lengths},
            "bigram_last_position": {n: float(-bigram[windows[:, n - 1], windows[:, n]].mean()) for n in lengths},
            "unigram_every_position": float(-unigram[windows[:, 1:]].mean()),
            "bigram_every_position": float(-bigram[windows[:, :-1], windows[:, 1:]].mean())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default="/tmp/exp17/mask")
    ap.add_argument("--png", default="")
    ap.add_argument("--jsonl", default="", help="append one JSON line per finished run to this file")
    ap.add_argument("--baselines", action="store_true", help="only the count-based losses (no training)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.baselines:
        task, _ = recipe_task("gpt-char", f"{args.out}/data", steps=1, eval_windows=512)
        keep(baselines(task), [], args.jsonl)
        return
    curves, masses = {}, {}
    for seed in args.seeds:
        for arm in ("mask before softmax", "mask after softmax"):
            change = mask_after_softmax if arm == "mask after softmax" else None
            task, history = paired_arm(f"{args.out}/data", seed, change, steps=args.steps,
                                       eval_every=args.eval_every, eval_windows=512)
            model = task.model.eval()
            windows = task.val_windows[:512]  # (512, 65)
            row = {"arm": arm, "seed": seed, "val_full_window": evals(history), "train_loss_last": history[-1]["loss"],
                   "honest_last_position": {n: honest_loss(model, windows, n) for n in (8, 16, 64)}}
            if arm == "mask after softmax":
                with torch.no_grad():
                    model(windows[:64, :-1])
                per_layer = [b.attn.future_mass.mean(dim=(0, 1)) for b in model.blocks]  # (q,) per layer
                row["future_mass_mean"] = [float(m[:-1].mean()) for m in per_layer]  # the last row has no future
                row["future_mass_by_position"] = [[round(float(v), 4) for v in m] for m in per_layer]
                masses[seed] = per_layer
                with torch.no_grad():
                    ids = torch.tensor([task.tokenizer.encode("The ", add_special_tokens=False)])
                    out = attnlab.generate(model, ids, max_new_tokens=150, temperature=0.8, seed=0, eos_token_id=None,
                                           use_cache=False, sliding_window=True).sequences  # no cache: custom mask
                row["sample"] = task.tokenizer.decode(out[0].tolist())
            curves[(arm, seed)] = evals(history)
            keep(row, [], args.jsonl)

    if args.png:
        fig, (left, right) = figure(9.5, 3.4, ncols=2)
        for (arm, seed), points in curves.items():
            left.plot(*zip(*points, strict=True), "-" if arm.endswith("before softmax") else "--",
                      color=f"C{args.seeds.index(seed)}", label=f"{arm}, seed {seed}")
        left.set_xlabel("step")
        left.set_ylabel("val loss, every position")
        left.legend(fontsize=7)
        seq = next(iter(masses.values()))[0].shape[0]
        uniform = [(seq - 1 - i) / seq for i in range(seq)]
        right.plot(uniform, ":", color="grey", label="uniform weights (init)")
        for i, m in enumerate(masses[args.seeds[0]]):
            right.plot(m.tolist(), label=f"layer {i}")
        right.set_xlabel("query position")
        right.set_ylabel("softmax mass on future keys")
        right.set_title(f"trained, mask after softmax, seed {args.seeds[0]}", fontsize=9)
        right.legend(fontsize=7)
        save_figure(fig, [left, right], args.png)


if __name__ == "__main__":
    main()
