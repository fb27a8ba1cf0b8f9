"""Do transformers need more data than CNNs (a weaker inductive bias)?

The vit-mnist recipe's ViT (4 x 4 patches of 7 pixels, 4 layers of width 64, random shifts of 1 pixel) against a
small CNN written with torch.nn (three 3x3 convolutions, max pooling, global average pooling), trained by the same
recipe task (same AdamW settings, warmup + cosine schedule, augmentation and batches for a seed), each to
convergence at every training-set size.

Data. MNIST-5k holds 5,000 images; the recipe keeps 1,000 of them as its fixed test set. The last --val images
of the recipe's (shuffled) training split are held out as a validation split, and a run trains on the first N
of the rest, so with --val 500 the largest N is 3,500. The test images are read once per run, after training.

Convergence. Every --eval-every steps the model is scored on the validation split and the weights with the best
validation accuracy so far are kept; test accuracy is that of those weights. By default each run follows its
whole cosine schedule (the recipe's 6,000 steps for the ViT, 4,000 for the CNN): a smaller --patience stops a run
after that many evaluations without a better validation accuracy, but then it stops with the learning rate still
up, short of what the schedule would reach. Whether the schedule is long enough is checked from outside: the
same runs with half the schedule (--vit-cap 3000 --cnn-cap 2000) go in --half, and the report prints how much the
doubling changed each size and model against the seeds' spread. Each JSON line records the validation curve, the
best step, the steps run and whether patience or the cap ended the run.

    python docs/experiments/vit_vs_cnn.py --jsonl docs/experiments/results/vit_vs_cnn.jsonl
    python docs/experiments/vit_vs_cnn.py --plot-only docs/experiments/results/vit_vs_cnn.jsonl \
        --half docs/experiments/results/vit_vs_cnn_half.jsonl --png docs/img/exp_vit_vs_cnn.png  # the doc's tables
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import attnlab

sys.path.insert(0, str(Path(__file__).parent))
from common import add_sweep_arguments, earlier_runs, figure, keep, recipe_task, seed_all, train  # noqa: E402

MODELS = ("ViT", "CNN")


def _cpu() -> str:
    """Which CPU ran the runs: at one thread a run is repeatable on one CPU, but another CPU's rounding (AVX2
    against AVX-512 kernels) makes the same seed a different draw, so a results line says where it was made."""
    from attnlab.benchmarks.common import machine

    m = machine()
    return f"{m['cpu']} ({m['cpu_capability']})"


CPU = _cpu()


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


class Converged(Exception):
    """Raised from the evaluation to end a run by patience (the Trainer has no early stop of its own)."""


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        correct = sum(int((model(xb).logits.argmax(-1) == yb).sum())  # logits: (250, 10)
                      for xb, yb in zip(x.split(250), y.split(250), strict=True))
    return correct / len(y)


class Watch:
    """The task's evaluation, replaced: score the validation split, keep the best weights, stop by patience.

    Improvement means a strictly higher validation accuracy, so a tie keeps the earlier (shorter) checkpoint."""

    def __init__(self, val_x: torch.Tensor, val_y: torch.Tensor, eval_every: int, patience: int):
        self.val_x, self.val_y, self.eval_every, self.patience = val_x, val_y, eval_every, patience
        self.curve: list[tuple[int, float]] = []  # (step, validation accuracy)
        self.best_step, self.best_acc, self.best_state = 0, -1.0, None

    def __call__(self, model: nn.Module) -> dict[str, float]:
        step = (len(self.curve) + 1) * self.eval_every  # the cap is a multiple of eval_every (checked in main)
        acc = accuracy(model, self.val_x, self.val_y)
        self.curve.append((step, round(acc, 4)))
        if acc > self.best_acc:
            self.best_step, self.best_acc = step, acc
            self.best_state = copy.deepcopy(model.state_dict())
        elif step - self.best_step >= self.patience * self.eval_every:
            raise Converged
        return {"accuracy": acc}


def run(size: int, name: str, seed: int, cap: int, args) -> dict:
    started = time.process_time()
    task, s = recipe_task("vit-mnist", args.out, steps=cap, eval_every=args.eval_every, seed=seed, log_every=10**6)
    val_x, val_y = task.train_x[-args.val:], task.train_y[-args.val:]
    assert size <= len(task.train_y) - args.val, f"--sizes: at most {len(task.train_y) - args.val} training images"
    task.train_x, task.train_y = task.train_x[:size], task.train_y[:size]  # disjoint from the validation split
    if name == "CNN":
        seed_all(seed)  # its own initial weights per seed; the batches come from the Trainer's generator (seed)
        task.model = SmallCNN()
    watch = Watch(val_x, val_y, args.eval_every, args.patience)
    task.evaluate = watch
    try:
        history = train(task, s)
        stopped, steps_run = "cap", history[-1]["step"] if history else cap
    except Converged:
        stopped, steps_run = "patience", watch.curve[-1][0]
    task.model.load_state_dict(watch.best_state)
    task.model.eval()
    test = accuracy(task.model, task.test_x, task.test_y)  # the only time this run reads the test images
    return {"train_images": size, "val_images": args.val, "model": name, "seed": seed,
            "params": sum(p.numel() for p in task.model.parameters()), "cap": cap, "eval_every": args.eval_every,
            "patience": args.patience, "val_accuracy": watch.curve, "best_step": watch.best_step,
            "best_val_accuracy": round(watch.best_acc, 4), "steps_run": steps_run, "stopped": stopped,
            "test_accuracy": round(test, 4), "cpu_s": round(time.process_time() - started, 1), "cpu": CPU}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[3500, 2000, 1000, 500, 250])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--val", type=int, default=500, help="validation images held out of the recipe's training split")
    ap.add_argument("--vit-cap", type=int, default=6000, help="the ViT's steps (the recipe's 6,000)")
    ap.add_argument("--cnn-cap", type=int, default=4000, help="the CNN's steps")
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--patience", type=int, default=1000,
                    help="evaluations without a better validation accuracy before stopping (the default never "
                         "stops a run early: each follows its whole schedule)")
    ap.add_argument("--half", nargs="+", default=[], metavar="JSONL",
                    help="with --plot-only: the same runs with half the schedule, to compare against")
    add_sweep_arguments(ap, "/tmp/exp26/vit_cnn")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.plot_only:
        return report(earlier_runs(args.plot_only), args.png, earlier_runs(args.half) if args.half else None)
    caps = {"ViT": args.vit_cap, "CNN": args.cnn_cap}
    if any(c % args.eval_every for c in caps.values()):
        ap.error(f"the caps {caps} must be multiples of --eval-every {args.eval_every}")
    results: list[dict] = []
    for size in args.sizes:  # the largest first: they decide the question and cost the most
        for seed in args.seeds:
            for name in args.models:
                keep(run(size, name, seed, caps[name], args), results, args.jsonl)
    report(results, args.png)


def summary(results: list[dict]) -> list[dict]:
    """Per size and model: test accuracy mean, min, max and sd over the seeds; the steps of each seed."""
    out = []
    for size in sorted({r["train_images"] for r in results}):
        for name in MODELS:
            runs = sorted((r for r in results if r["train_images"] == size and r["model"] == name),
                          key=lambda r: r["seed"])
            if runs:
                acc = [r["test_accuracy"] for r in runs]
                out.append({"train_images": size, "model": name, "runs": runs, "mean": statistics.mean(acc),
                            "min": min(acc), "max": max(acc), "sd": statistics.stdev(acc) if len(acc) > 1 else 0.0})
    return out


def doubling(full: list[dict], half: list[dict]) -> list[str]:
    """Markdown rows: per size and model, the mean test accuracy with half the schedule and with the whole one, the
    change of the means, and the same-seed changes (min to max)."""
    rows = []
    for size in sorted({r["train_images"] for r in full}):
        for name in MODELS:
            pairs = [(h, f) for f in full for h in half if (f["train_images"], f["model"], f["seed"])
                     == (size, name, h["seed"]) and h["train_images"] == size and h["model"] == name]
            if not pairs:
                continue
            pairs.sort(key=lambda p: p[1]["seed"])
            before = statistics.mean(h["test_accuracy"] for h, _ in pairs)
            after = statistics.mean(f["test_accuracy"] for _, f in pairs)
            changes = [f["test_accuracy"] - h["test_accuracy"] for h, f in pairs]
            rows.append(f"| {size:,} | {name} | {pairs[0][0]['cap']:,} / {pairs[0][1]['cap']:,} | {before:.3f} | "
                        f"{after:.3f} | {after - before:+.3f} | {min(changes):+.3f} to {max(changes):+.3f} |")
    return rows


def report(results: list[dict], png: str, half: list[dict] | None = None) -> None:
    """Print the doc's table (markdown), the comparison with `half` (the same runs, half the schedule), and draw
    --png."""
    rows = summary(results)
    by = {(r["train_images"], r["model"]): r for r in rows}
    for size in sorted({r["train_images"] for r in rows}):
        if (size, "ViT") not in by or (size, "CNN") not in by:
            continue
        v, c = by[(size, "ViT")], by[(size, "CNN")]
        cells = [f"{x['mean']:.3f} ({x['min']:.3f}-{x['max']:.3f})" for x in (v, c)]
        ratio = (1 - v["mean"]) / (1 - c["mean"])
        steps = [" / ".join(f"{r['best_step']:,} {r['stopped'][0]}" for r in x["runs"])  # p: patience, c: cap
                 for x in (v, c)]
        print(f"| {size:,} | {cells[0]} | {cells[1]} | {100 * (1 - v['mean']):.1f}% / {100 * (1 - c['mean']):.1f}% "
              f"= {ratio:.2f}x | {steps[0]} | {steps[1]} |")
    print(f"CPU: {sum(r['cpu_s'] for r in results) / 60:.1f} min over {len(results)} runs")
    if half:
        for line in doubling(results, half):
            print(line)
    if not png:
        return
    fig, ax = figure()
    sizes = sorted({r["train_images"] for r in rows})
    for i, name in enumerate(MODELS):
        mine = [r for r in rows if r["model"] == name]
        xs = [r["train_images"] for r in mine]
        ax.plot(xs, [r["mean"] for r in mine], "o-", color=f"C{i}", label=f"{name} (mean, min-max of 3 seeds)")
        ax.fill_between(xs, [r["min"] for r in mine], [r["max"] for r in mine], color=f"C{i}", alpha=0.2)
        for r in mine:
            ax.plot([r["train_images"]] * len(r["runs"]), [x["test_accuracy"] for x in r["runs"]], ".",
                    color=f"C{i}", alpha=0.6)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_xlabel("training images (MNIST-5k; 500 more for validation)")
    ax.set_ylabel("test accuracy (1,000 images)")
    caps = {r["model"]: r["cap"] for r in results}
    ax.set_title(f"best-validation weights; ViT {caps.get('ViT', 0):,} steps, CNN {caps.get('CNN', 0):,}",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png)


if __name__ == "__main__":
    main()
