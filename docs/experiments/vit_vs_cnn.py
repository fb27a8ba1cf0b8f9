"""Issue 17.5: do transformers need more data than CNNs (a weaker inductive bias)?

The vit-mnist recipe (ViT, 4 x 4 patches of 7 pixels, 4 layers of width 64, random shifts of 1 pixel) against
a small CNN written with torch.nn (three 3x3 convolutions, max pooling, global average pooling), trained by
the same recipe task (same AdamW settings, schedule, augmentation, batches and steps) on the first N images of
the recipe's training split, N = 500 .. 4,000, and scored on the recipe's fixed 1,000 test images. MNIST-5k
holds 5,000 images and the recipe keeps 1,000 for testing, so 4,000 is the largest training set here.

    python docs/experiments/vit_vs_cnn.py [--sizes 500 1000 2000 4000 --steps 2000 --seeds 0 1] \
        --png docs/img/exp_vit_vs_cnn.png | tee vit_cnn.jsonl
    python docs/experiments/vit_vs_cnn.py --plot-only vit_cnn.jsonl --png docs/img/exp_vit_vs_cnn.png  # redraw
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from torch import nn

import attnlab

sys.path.insert(0, str(Path(__file__).parent))
from common import figure, recipe_task, seed_all, train  # noqa: E402


class SmallCNN(nn.Module):
    """Locality and translation equivariance built in: what a ViT must learn from data."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (batch, width, 14, 14)
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (batch, 2w, 7, 7)
            nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))  # (batch, 2w, 1, 1)
        self.head = nn.Linear(2 * width, 10)

    def forward(self, pixels):  # (batch, 1, 28, 28) -> ModelOutput(logits=(batch, 10)), as the recipe's task expects
        return attnlab.ModelOutput(logits=self.head(self.features(pixels).flatten(1)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--out", default="/tmp/exp17/vit_cnn")
    ap.add_argument("--png", default="")
    ap.add_argument("--plot-only", nargs="+", default=[], metavar="JSONL",
                    help="draw --png from the JSON lines earlier runs of this script printed, without training")
    args = ap.parse_args()
    if args.plot_only:
        results = [json.loads(line) for path in args.plot_only for line in open(path) if line.startswith("{")]
        args.sizes = sorted({r["train_images"] for r in results})
        args.seeds = sorted({r["seed"] for r in results})
        args.steps = results[0]["accuracy"][-1][0]
        return plot(results, args)
    results = []
    for size in args.sizes:
        for name in ("ViT", "CNN"):
            for seed in args.seeds:
                task, s = recipe_task("vit-mnist", args.out, steps=args.steps, eval_every=max(1, args.steps // 4),
                                      seed=seed)
                task.train_x, task.train_y = task.train_x[:size], task.train_y[:size]
                if name == "CNN":
                    seed_all(seed)
                    task.model = SmallCNN()
                history = train(task, s)
                row = {"train_images": size, "model": name, "seed": seed,
                       "params": sum(p.numel() for p in task.model.parameters()),
                       "accuracy": [(r["step"], r["eval_accuracy"]) for r in history if "eval_accuracy" in r],
                       "final_train_loss": history[-1]["loss"]}
                results.append(row)
                print(json.dumps(row), flush=True)

    plot(results, args)


def plot(results, args) -> None:
    if not args.png:
        return
    fig, ax = figure()
    for i, name in enumerate(("ViT", "CNN")):
        for seed in args.seeds:
            pts = [(r["train_images"], r["accuracy"][-1][1]) for r in results
                   if r["model"] == name and r["seed"] == seed]
            ax.plot(*zip(*pts, strict=True), "o-", color=f"C{i}", alpha=0.8,
                    label=name if seed == args.seeds[0] else None)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(args.sizes, [str(n) for n in args.sizes])
    ax.set_xlabel("training images (MNIST-5k)")
    ax.set_ylabel("test accuracy (1,000 images)")
    ax.set_title(f"after {args.steps} steps, seeds {', '.join(map(str, args.seeds))}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png)


if __name__ == "__main__":
    main()
