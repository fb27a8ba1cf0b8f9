"""Do residual connections and LayerNorm make deep stacks trainable? The same deep decoder with and without each.

Seeds 001, 002 and 004 say the residual path and LayerNorm are what let a stack of many layers train. The run:
the gpt-char recipe (pre-LN decoder, lr 2e-3, 100 warmup steps, clipping at 1.0, batch 12; each evaluation on
480 validation windows) at width 64 (4 heads, d_ff 256) and depth 12 or 24, trained per seed from the same
initial weights in four arms:

  both          x = x + Sublayer(Norm(x))       attnlab's block as it is
  no residual   x = Sublayer(Norm(x))           the block's output replaces the stream
  no norm       x = x + Sublayer(x)             every LayerNorm (and the final one) an identity
  neither       x = Sublayer(x)

The library is unchanged: the arms swap each block's class for a subclass whose `_sublayer` drops the residual,
or the norms for nn.Identity. Each finished run appends one JSON line (val curve, first and final train loss,
gradient norms, when the loss left the unigram plateau, whether it went non-finite) to --jsonl at once.

    python docs/experiments/residual_depth.py --depths 12 24 --seeds 0 1 2 --jsonl residual_depth.jsonl
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import torch
from torch import nn

import attnlab
from attnlab.layers.block import Block

sys.path.insert(0, str(Path(__file__).parent))
from common import add_sweep_arguments, evals, keep, recipe_task, seed_all, train  # noqa: E402
from heads_cost import machine  # noqa: E402
from ln_warmup import plateau_end, train_curve  # noqa: E402

WIDTH = dict(d_model=64, n_heads=4, d_ff=256)
ARMS = ("both", "no residual", "no norm", "neither")


class NoResidualBlock(Block):
    """attnlab's block without the residual path: each sublayer's output replaces the stream."""

    def _sublayer(self, x: torch.Tensor, norm: nn.Module, fn) -> torch.Tensor:
        return self._drop(fn(norm(x)))


def apply_arm(model: nn.Module, arm: str) -> None:
    """Change a built decoder in place into the arm's variant (weights kept)."""
    if arm in ("no residual", "neither"):
        for block in model.blocks:
            block.__class__ = NoResidualBlock
    if arm in ("no norm", "neither"):
        for block in model.blocks:
            block.norm1, block.norm2 = nn.Identity(), nn.Identity()
        if model.final_norm is not None:
            model.final_norm = nn.Identity()


def run(arm: str, depth: int, seed: int, steps: int, eval_every: int, out: str) -> dict:
    task, s = recipe_task("gpt-char", out, n_layers=depth, **WIDTH, steps=steps, eval_every=eval_every, seed=seed,
                          eval_windows=480)  # 40 batches per evaluation
    seed_all(seed)
    task.model = attnlab.build_model(task.model.config)  # the same initial weights in every arm of a seed
    apply_arm(task.model, arm)
    history = train(task, s)
    losses = [r["loss"] for r in history]
    norms = [r["grad_norm"] for r in history[20:] if "grad_norm" in r and math.isfinite(r["grad_norm"])]
    return {"arm": arm, "n_layers": depth, "seed": seed, "steps": steps, **WIDTH,
            **machine(), "val": evals(history), "first_loss": losses[0], "final_train_loss": losses[-1],
            "non_finite": not all(math.isfinite(v) for v in losses),
            "grad_norm_median": statistics.median(norms) if norms else None,
            "clipped_fraction": sum(n > s.grad_clip for n in norms) / max(1, len(norms)),
            "plateau_end": plateau_end(history), "train_curve": train_curve(history)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", type=int, nargs="+", default=[12, 24])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--eval-every", type=int, default=100)
    add_sweep_arguments(ap, "/tmp/attnlab-exp/residual_depth")
    args = ap.parse_args()
    torch.set_num_threads(1)
    results: list[dict] = []
    for depth in args.depths:
        for seed in args.seeds:
            for arm in args.arms:
                keep(run(arm, depth, seed, args.steps, args.eval_every, args.out), results, args.jsonl)


if __name__ == "__main__":
    main()
