"""Section 2 of docs/experiments.md: learned vs sinusoidal vs RoPE vs no positions in the gpt-char recipe.

Each run is what `attnlab train gpt-char position=P n_layers=4 d_model=64 n_heads=4 d_ff=256 steps=1500
eval_every=250 threads=1 seed=S` trains (the recipe's task and attnlab's Trainer, seeded as the command seeds them,
so the same initial weights and the same batches), without its checkpoints. One JSON line per finished run: the
val loss at every evaluation, the final training loss, the parameter count and the CPU seconds.

    python docs/experiments/positions.py --seeds 0 1 2 --jsonl docs/experiments/results/positions.jsonl
    python docs/experiments/positions.py --plot-only docs/experiments/results/positions.jsonl \
        --png docs/img/exp-positions.png
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import add_sweep_arguments, earlier_runs, evals, figure, keep, recipe_task, save_figure, train  # noqa

POSITIONS = ("learned", "sinusoidal", "rope", "none")
MODEL = dict(n_layers=4, d_model=64, n_heads=4, d_ff=256, steps=1500, eval_every=250)


def run(position: str, seed: int, out: str, steps: int, eval_every: int) -> dict:
    task, s = recipe_task("gpt-char", out, **{**MODEL, "steps": steps, "eval_every": eval_every},
                          position=position, seed=seed)
    cpu = time.process_time()
    history = train(task, s)
    return {"position": position, "seed": seed, "steps": steps, "params": task.model.num_parameters(),
            "val": evals(history), "final_train_loss": history[-1]["loss"],
            "cpu_s": round(time.process_time() - cpu, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--positions", nargs="+", default=list(POSITIONS), choices=POSITIONS)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--steps", type=int, default=MODEL["steps"], help="shorter runs only to check the recipe")
    ap.add_argument("--eval-every", type=int, default=MODEL["eval_every"])
    add_sweep_arguments(ap, out="/tmp/exp26/positions")
    args = ap.parse_args()
    if args.plot_only:
        return plot(earlier_runs(args.plot_only), args.png)
    torch.set_num_threads(1)
    results = []
    for seed in args.seeds:
        for position in args.positions:
            keep(run(position, seed, args.out, args.steps, args.eval_every), results, args.jsonl)
    plot(results, args.png)


def plot(results: list[dict], png: str) -> None:
    """Left: val loss curves, one line per seed, a colour per scheme. Right: final val loss, one point per seed."""
    if not png or not results:
        return
    fig, (left, right) = figure(width=10, height=3.8, ncols=2)
    for i, position in enumerate(POSITIONS):
        rows = sorted((r for r in results if r["position"] == position), key=lambda r: r["seed"])
        for j, r in enumerate(rows):
            left.plot(*zip(*r["val"], strict=True), "o-", ms=3, lw=1, color=f"C{i}", alpha=0.8,
                      label=position if j == 0 else None)
        right.plot([i] * len(rows), [r["val"][-1][1] for r in rows], "o", color=f"C{i}", alpha=0.8)
    seeds = ", ".join(str(s) for s in sorted({r["seed"] for r in results}))
    left.set_xlabel("step")
    left.set_ylabel("val loss (nats/char)")
    left.set_title(f"gpt-char 4 x 64, lr 2e-3; one line per seed ({seeds})", fontsize=9)
    left.legend(fontsize=8)
    right.set_xticks(range(len(POSITIONS)), POSITIONS, fontsize=8)
    right.set_ylabel(f"val loss at step {results[0]['val'][-1][0]}")
    right.set_title("final val loss, one point per seed", fontsize=9)
    save_figure(fig, (left, right), png)


if __name__ == "__main__":
    main()
