"""Seed 001: too few heads bottleneck what attention can relate, too many are wasteful or unstable.

Row 4 / section 4 measured only the cost of h heads; this script measures quality. The gpt-char recipe (one
token per character, windows of 64) at a fixed width, d_model 64, 2 layers, d_ff 256, with 1, 2, 4, 8, 16 or
32 heads (head width 64 down to 2): every arm has the same parameter count, since the head count only changes
how the d_model columns of W_Q, W_K, W_V are grouped. Each arm's learning rate is chosen on the validation half
of the held-out text with one tuning seed, then seeds 0, 1, 2 are trained at it and scored on the test half
(heldout.py). Besides the losses, each run records its largest gradient norm and whether every loss stayed
finite: "unstable" would show as a diverged run or a tuned learning rate far below the others'.

    python docs/experiments/heads_quality.py --jsonl docs/experiments/results/heads_quality.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import recipe_task  # noqa: E402
from heldout import SEEDS, sweep  # noqa: E402

MODEL = {"n_layers": 2, "d_model": 64, "d_ff": 256}


def builder(n_heads: int, out: str):
    def build(lr: float, seed: int, steps: int):
        return recipe_task("gpt-char", out, **MODEL, n_heads=n_heads, lr=lr, steps=steps, eval_every=steps,
                           seed=seed)  # recipe_task seeds everything with `seed` before building the model
    return build


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--out", default="/tmp/exp26/heads_quality")
    ap.add_argument("--jsonl", default="")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--tuned-from", default="", metavar="JSONL",
                    help="no tuning: each arm at the rate its tune runs in this results file chose (new seeds)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    arms = [({"n_heads": h, "d_head": MODEL["d_model"] // h, **MODEL}, builder(h, args.out)) for h in args.heads]
    sweep(arms, args.steps, args.jsonl, seeds=args.seeds, tuned_from=args.tuned_from)


if __name__ == "__main__":
    main()
