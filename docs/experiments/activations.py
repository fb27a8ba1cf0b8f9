"""Why does GELU trail ReLU and SwiGLU in docs/experiments.md section 3? Learning rate, init or steps?

Section 3 trains the gpt-char recipe (4 layers, d_model 64, 4 heads; d_ff 256, SwiGLU d_ff 170 for the same
parameter count) for 1,500 steps at lr 2e-3, and GELU ends 0.12-0.13 nats behind ReLU (3 seeds). One
suspect: with std-0.02 weights and LayerNorm'd inputs, the FFN pre-activations start with std ~0.02 * sqrt(64) =
0.16, where GELU is almost linear (GELU(x) ~ 0.5x + 0.4x^2) while ReLU is already a hard kink. Each run changes
one thing:

  --lr LR        the peak learning rate (section 3: 2e-3)
  --init scaled  every block's FFN input projection (W_1, and W_gate for SwiGLU) re-drawn at std 1/sqrt(d_model),
                 so its pre-activations start with std ~1, where GELU is non-linear (the rest stays at std 0.02)
  --steps N      a longer run (the cosine schedule stretched to N steps)

Each run goes through the recipe's task and attnlab's Trainer (recipe_task + train), appends one JSON line to
--jsonl when it finishes (val curve, final train loss, and the std of the activation's input, averaged over the
layers, on 16 validation windows at init and at the end).

    python docs/experiments/activations.py --activations gelu relu swiglu --lr 2e-3 --jsonl act.jsonl
    python docs/experiments/activations.py --plot-only act.jsonl --png docs/img/exp_activations_gelu.png
    python docs/experiments/activations.py --plot-only act.jsonl --plot-setting --png docs/img/exp-activations.png
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import add_sweep_arguments, earlier_runs, evals, figure, keep, recipe_task, save_figure, train  # noqa

D_FF = {"relu": 256, "gelu": 256, "swiglu": 170}  # equal parameter count (210,816 / 210,640), as in section 3
MODEL = dict(n_layers=4, d_model=64, n_heads=4)


def scale_ffn_input(model, seed: int) -> None:
    """Re-draw W_1 (and W_gate) of every feed-forward at std 1/sqrt(d_model): unit-variance pre-activations."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in model.blocks:
            w = block.ffn.up.weight  # (d_ff or 2 d_ff, d_model)
            w.copy_(torch.randn(w.shape, generator=gen) / math.sqrt(w.shape[1]))


def preactivation_std(model, ids: torch.Tensor) -> float:
    """Std of what the activation function sees (the gate half for gated units), mean over the layers."""
    stds = []

    def hook(module, inputs, output):  # output: (batch, seq, d_ff or 2 d_ff)
        h = output.chunk(2, dim=-1)[0] if module_gated[module] else output
        stds.append(float(h.std()))

    module_gated = {block.ffn.up: block.ffn.gated for block in model.blocks}
    handles = [block.ffn.up.register_forward_hook(hook) for block in model.blocks]
    try:
        with torch.no_grad():
            model.eval()(ids)
    finally:
        for handle in handles:
            handle.remove()
    return sum(stds) / len(stds)


def run(activation: str, lr: float, init: str, steps: int, seed: int, out: str) -> dict:
    task, s = recipe_task("gpt-char", out, **MODEL, activation=activation, d_ff=D_FF[activation], lr=lr,
                          steps=steps, eval_every=max(1, steps // 6), seed=seed)
    if init == "scaled":
        scale_ffn_input(task.model, seed)
    ids = task.val_windows[:16, :-1]  # (16, seq)
    std_init = preactivation_std(task.model, ids)
    history = train(task, s)
    return {"activation": activation, "d_ff": D_FF[activation], "lr": lr, "init": init, "steps": steps, "seed": seed,
            "params": task.model.num_parameters(), "val": evals(history), "final_train_loss": history[-1]["loss"],
            "preact_std_init": std_init, "preact_std_end": preactivation_std(task.model, ids)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--activations", nargs="+", default=["gelu", "relu", "swiglu"], choices=sorted(D_FF))
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--init", default="default", choices=["default", "scaled"])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--plot-setting", action="store_true",
                    help="with --plot-only: draw only the runs at --lr, --init and --steps (section 3's by default)")
    add_sweep_arguments(ap, out="/tmp/exp17/activations")
    args = ap.parse_args()
    if args.plot_only:
        runs = section3_runs(earlier_runs(args.plot_only))
        if args.plot_setting:
            runs = [r for r in runs if (r["lr"], r["init"], r["steps"]) == (args.lr, args.init, args.steps)]
        return plot(runs, args.png)
    torch.set_num_threads(1)
    results = []
    for seed in args.seeds:
        for activation in args.activations:
            keep(run(activation, args.lr, args.init, args.steps, seed, args.out), results, args.jsonl)
    plot(results, args.png)


def section3_runs(rows: list[dict]) -> list[dict]:
    """The runs of --plot-only's files as this script's runs: a learned-positions run of positions.py is the GELU
    run of section 3 (the same configuration: same weights, batches and losses), the other schemes are left out,
    and a run recorded twice (same activation, lr, init, steps and seed) is drawn once."""
    runs = {}
    for r in rows:
        if "position" in r:
            if r["position"] != "learned" or r["steps"] != 1500:
                continue
            r = {"activation": "gelu", "d_ff": D_FF["gelu"], "lr": 2e-3, "init": "default", "steps": 1500, **r}
        runs[(r["activation"], r["lr"], r["init"], r["steps"], r["seed"])] = r
    return list(runs.values())


def arm(r: dict) -> str:
    """The one thing a run changes from section 3's setting (lr 2e-3, default init, 1,500 steps)."""
    if r["init"] != "default":
        return "W_1 std 1/sqrt(d)"
    if r["steps"] != 1500:
        return f"{r['steps']} steps"
    return f"lr {r['lr']:g}" + (" (sec. 3)" if r["lr"] == 2e-3 else "")


def plot(results: list[dict], png: str) -> None:
    """Left: final val loss per arm and activation, one point per seed. Right: val curves at 1,500 steps and the
    longer runs, seed 0, default init, lr 2e-3."""
    if not png or not results:
        return
    fig, (left, right) = figure(width=10, height=3.8, ncols=2)
    order = sorted({arm(r) for r in results}, key=lambda a: (a.startswith("W_1"), "steps" in a,
                                                             float(a.split()[1]) if a.startswith("lr") else 0))
    for i, act in enumerate(("gelu", "relu", "swiglu")):
        rows = [r for r in results if r["activation"] == act]
        if not rows:
            continue
        left.plot([order.index(arm(r)) + (i - 1) * 0.15 for r in rows], [r["val"][-1][1] for r in rows], "o",
                  color=f"C{i}", alpha=0.8, label=act)
        seed0 = min(r["seed"] for r in results)
        for r in rows:
            if r["seed"] == seed0 and r["init"] == "default" and r["lr"] == 2e-3:
                right.plot(*zip(*r["val"], strict=True), "o-" if r["steps"] == 1500 else "s--", ms=3, color=f"C{i}",
                           label=f"{act}, {r['steps']} steps")
    left.set_xticks(range(len(order)), order, fontsize=8, rotation=15)
    left.set_xlim(-0.5, len(order) - 0.5)
    left.set_ylabel("final val loss (nats/char)")
    left.set_title("gpt-char 4 x 64, equal parameters; one point per seed", fontsize=9)
    left.legend(fontsize=8)
    right.set_xlabel("step")
    right.set_ylabel("val loss")
    right.set_title("lr 2e-3, default init, seed 0", fontsize=9)
    right.legend(fontsize=8)
    save_figure(fig, (left, right), png)


if __name__ == "__main__":
    main()
