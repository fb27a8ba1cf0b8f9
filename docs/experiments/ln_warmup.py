"""Does post-LN need a learning-rate warmup where pre-LN does not? A warmup sweep for both.

The gpt-char recipe at the depth where docs/experiments.md section 1 saw post-LN stall without warmup (16
layers of width 64; 12 x 64 and 16 x 32 trained without warmup here, see the doc), shortened to --steps so the
whole sweep fits in a CPU budget: every (seed, placement, warmup) is one run of `attnlab train gpt-char`'s
task and Trainer (recipe_task + train), the other keys as in section 1 (lr 2e-3, clipping at 1.0, batch 12).
Each finished run appends one JSON line to --jsonl at once, so a sweep cut off keeps what it finished.

    python docs/experiments/ln_warmup.py --seeds 0 1 2 --jsonl ln_warmup.jsonl          # ~25 min CPU
    python docs/experiments/ln_warmup.py --plot-only ln_warmup.jsonl --png docs/img/exp_ln_warmup.png

Section 1's 1,500-step runs are the same script with --steps 1500 --eval-every 250 (the commands are in the doc);
--plot-only ... --curves draws their train and val curves.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import add_sweep_arguments, earlier_runs, evals, figure, keep, recipe_task, save_figure, train  # noqa: E402

MODEL = dict(n_layers=16, d_model=64, n_heads=4, d_ff=256)
UNIGRAM = 3.2  # val loss of a model that learned only character frequencies (docs/experiments.md)
PLATEAU_END = 3.1  # a train loss below this has left the unigram plateau (plateau_end)


def task_for(placement: str, warmup: int, seed: int, steps: int, eval_every: int, model: dict, out: str):
    """(task, settings) of one run: `attnlab train gpt-char` with these keys and section 1's others."""
    return recipe_task("gpt-char", out, **model, norm_placement=placement, warmup=warmup, steps=steps,
                       eval_every=eval_every, seed=seed)


def run(placement: str, warmup: int, seed: int, steps: int, eval_every: int, model: dict, out: str) -> dict:
    task, s = task_for(placement, warmup, seed, steps, eval_every, model, out)
    history = train(task, s)
    norms = [r["grad_norm"] for r in history[20:] if "grad_norm" in r]  # after the first 20 steps
    deciles = statistics.quantiles(norms, n=10) if len(norms) > 1 else [None] * 9
    return {"placement": placement, "warmup": warmup, "seed": seed, "steps": steps, **model,
            "val": evals(history), "first_loss": history[0]["loss"], "final_train_loss": history[-1]["loss"],
            "grad_norm_median": statistics.median(norms) if norms else None,
            "grad_norm_p10": deciles[0], "grad_norm_p90": deciles[8],
            "clipped_fraction": sum(n > s.grad_clip for n in norms) / max(1, len(norms)),
            "plateau_end": plateau_end(history), "train_curve": train_curve(history)}


def train_curve(history: list[dict], block: int = 25) -> list[list[float]]:
    """[last step, mean train loss] of each block of `block` steps: the figure's training curve, kept small (the
    results file holds evaluations and summaries, not every step)."""
    out = []
    for i in range(0, len(history) - block + 1, block):
        chunk = history[i:i + block]
        out.append([chunk[-1]["step"], round(sum(r["loss"] for r in chunk) / block, 4)])
    return out


def plateau_end(history: list[dict], level: float = PLATEAU_END, window: int = 10) -> int | None:
    """The first step at which the mean train loss of the last `window` steps is below `level`, i.e. where a
    run leaves the unigram plateau (one batch's loss is too noisy to say); None if it never does."""
    losses = [r["loss"] for r in history]
    for i in range(window, len(losses) + 1):
        if sum(losses[i - window:i]) / window < level:
            return history[i - 1]["step"]
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--placements", nargs="+", default=["post", "pre"])
    ap.add_argument("--warmups", type=int, nargs="+", default=[0, 100, 300, 600])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--eval-every", type=int, default=200)
    ap.add_argument("--lr", type=float, default=None, help="peak learning rate (default: the recipe's, 2e-3)")
    ap.add_argument("--grad-clip", type=float, default=None, help="0 turns clipping off (default: the recipe's 1.0)")
    ap.add_argument("--n-layers", type=int, default=MODEL["n_layers"])
    ap.add_argument("--d-model", type=int, default=MODEL["d_model"])
    ap.add_argument("--curves", action="store_true",
                    help="with --plot-only: draw each run's train and val curves (section 1's figure)")
    add_sweep_arguments(ap, out="/tmp/exp17/ln_warmup")
    args = ap.parse_args()
    if args.plot_only:
        return (plot_curves if args.curves else plot)(earlier_runs(args.plot_only), args.png)
    torch.set_num_threads(1)
    model = dict(MODEL, n_layers=args.n_layers, d_model=args.d_model, d_ff=4 * args.d_model)
    # lr / grad_clip given: passed to the recipe like the model keys, and so recorded in each run's line
    model.update({k: v for k, v in (("lr", args.lr), ("grad_clip", args.grad_clip)) if v is not None})
    results = []
    for seed in args.seeds:  # seed-major: a sweep cut off has every setting at the first seeds
        for placement in args.placements:
            for warmup in args.warmups:
                keep(run(placement, warmup, seed, args.steps, args.eval_every, model, args.out), results, args.jsonl)
    plot(results, args.png)


def plot(results: list[dict], png: str) -> None:
    """Left: final val loss against warmup, one point per seed. Right: the val curves of seed 0."""
    if not png or not results:
        return
    fig, (left, right) = figure(width=10, height=3.6, ncols=2)
    warmups = sorted({r["warmup"] for r in results})
    for i, placement in enumerate(("pre", "post")):
        rows = [r for r in results if r["placement"] == placement]
        if not rows:
            continue
        x = [warmups.index(r["warmup"]) + (i - 0.5) * 0.12 for r in rows]  # side by side, not on top
        left.plot(x, [r["val"][-1][1] for r in rows], "o", color=f"C{i}", alpha=0.8, label=f"{placement}-LN")
        for r in rows:
            if r["seed"] == min(q["seed"] for q in results):
                right.plot(*zip(*r["val"], strict=True), "o-" if placement == "pre" else "s--", ms=3,
                           color=f"C{i}", alpha=0.4 + 0.6 * warmups.index(r["warmup"]) / max(1, len(warmups) - 1),
                           label=f"{placement}-LN, warmup {r['warmup']}")
    for ax in (left, right):
        ax.axhline(UNIGRAM, color="grey", lw=0.8, ls=":")
    r0 = results[0]
    left.set_xticks(range(len(warmups)), [str(w) for w in warmups])
    left.set_xlabel("warmup steps")
    left.set_ylabel(f"val loss at step {r0['steps']} (nats/char)")
    left.set_title(f"{r0['n_layers']} layers x {r0['d_model']}, {r0['steps']} steps, seeds "
                   f"{', '.join(map(str, sorted({r['seed'] for r in results})))}; dotted: unigram", fontsize=9)
    left.legend(fontsize=8)
    right.set_xlabel("step")
    right.set_ylabel("val loss")
    right.set_title(f"seed {min(r['seed'] for r in results)}", fontsize=9)
    right.legend(fontsize=7, ncol=2)
    save_figure(fig, [left, right], png)


def plot_curves(results: list[dict], png: str) -> None:
    """Section 1's figure: every run's train loss (means of 25 steps, thin) and val loss (dots), one colour per
    (placement, warmup), seed 0 drawn darker than the others."""
    if not png or not results:
        return
    fig, ax = figure(width=7.5, height=4.2)
    settings = list(dict.fromkeys((r["placement"], r["warmup"]) for r in results))
    first = min(r["seed"] for r in results)
    for i, (placement, warmup) in enumerate(settings):
        name = f"{placement}-LN" + (f", warmup {warmup}" if warmup else "")
        for r in (r for r in results if (r["placement"], r["warmup"]) == (placement, warmup)):
            alpha = 1.0 if r["seed"] == first else 0.45
            ax.plot(*zip(*r["train_curve"], strict=True), color=f"C{i}", lw=0.8, alpha=alpha,
                    label=f"{name} (train)" if r["seed"] == first else None)
            ax.plot(*zip(*r["val"], strict=True), "o--", ms=3.5, lw=0.8, color=f"C{i}", alpha=alpha,
                    label=f"{name} (val)" if r["seed"] == first else None)
    ax.axhline(UNIGRAM, color="grey", lw=0.8, ls=":")
    r0 = results[0]
    seeds = ", ".join(map(str, sorted({r["seed"] for r in results})))
    ax.set_title(f"{r0['n_layers']} layers, d_model {r0['d_model']}, lr 2e-3, clip 1.0; seeds {seeds} "
                 f"(seed {first} darker); dotted: unigram", fontsize=9)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/char); train: mean of 25 steps")
    ax.legend(fontsize=8)
    save_figure(fig, [ax], png)


if __name__ == "__main__":
    main()
