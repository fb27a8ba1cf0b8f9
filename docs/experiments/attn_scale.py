"""Does dividing the scores by sqrt(d_k) keep their variance near 1, and does training need it?

Part 1 (seconds): the variance of q.k over the unmasked (query, key) pairs, with and without the 1/sqrt(d_k)
factor, for d_k = 8 .. 128: on unit-variance random vectors (the seeds' assumption), on attnlab's freshly
initialised decoder (layer 0, random tokens) and on the shipped trained gpt-char checkpoint (every layer, its
validation text), all read with attnlab.record(..., names="blocks.*.attn.raw_scores").
Part 2 (minutes): the gpt-char recipe trained with attn_scale=None (1/sqrt(d_k)) and attn_scale=1.0 (no
scale), the same initial weights and batches per seed; val loss curves, then per-layer score variance and
attention entropy of the trained models.

    python docs/experiments/attn_scale.py --seeds 0 1 2 --png docs/img/exp_attn_scale.png \
        --jsonl docs/experiments/results/attn_scale.jsonl
    python docs/experiments/attn_scale.py --n-heads 1 --skip-part1 --seeds 0 1 2 \
        --png docs/img/exp_attn_scale_dk128.png --jsonl docs/experiments/results/attn_scale_dk128.jsonl

Every result is a JSON line, printed and appended to --jsonl as it comes: part 1's rows carry "part": "random"
(one per d_k) or "part": "checkpoint" (one per layer); part 2's rows one (arm, seed) run each, with its d_k.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

import attnlab

sys.path.insert(0, str(Path(__file__).parent))
from common import evals, figure, keep, recipe_task, save_figure, seed_all, train  # noqa: E402

CHECKPOINT = Path(attnlab.__file__).parent / "assets" / "checkpoints" / "gpt-char"


def score_stats(model, ids: torch.Tensor) -> list[dict[str, float]]:
    """Per layer: variance of the scores (with and without the scale) over the causal (q, k) pairs, and the
    mean attention entropy in nats (uniform attention over i + 1 keys would give log(i + 1))."""
    rec = attnlab.record(model, ids, names=["blocks.*.attn.raw_scores", "blocks.*.attn.weights"])
    n = ids.shape[1]
    keep = torch.ones(n, n, dtype=torch.bool).tril()  # (q, k) pairs the causal mask lets through
    rows = []
    for i in range(model.config.n_layers):
        attn = model.blocks[i].attn
        scaled = rec[f"blocks.{i}.attn.raw_scores"][..., keep]  # (batch, heads, pairs)
        weights = rec[f"blocks.{i}.attn.weights"]  # (batch, heads, q, k)
        entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1)  # (batch, heads, q)
        rows.append({"layer": i, "var_scaled": float(scaled.var()), "var_unscaled": float((scaled / attn.scale).var()),
                     "scale": attn.scale, "entropy": float(entropy.mean())})
    return rows


def random_weights_table(d_model: int = 128, n: int = 64) -> list[dict[str, float]]:
    torch.manual_seed(0)
    rows = []
    for d_k in (8, 16, 32, 64, 128):
        q, k = torch.randn(4096, d_k), torch.randn(4096, d_k)  # unit-variance entries, as the seeds assume
        dots = (q * k).sum(-1)
        model = attnlab.build_model(attnlab.ModelConfig(topology="decoder", vocab_size=104, d_model=d_model,
                                                        n_heads=d_model // d_k, d_ff=4 * d_model, n_layers=1,
                                                        max_len=n)).eval()
        init = score_stats(model, torch.randint(0, 104, (16, n)))[0]
        rows.append({"d_k": d_k, "unit_unscaled": float(dots.var()), "unit_scaled": float((dots / d_k ** 0.5).var()),
                     "init_unscaled": init["var_unscaled"], "init_scaled": init["var_scaled"]})
    return rows


def val_ids(task, n_windows: int = 32) -> torch.Tensor:
    return task.val_windows[:n_windows, :-1]  # (n_windows, seq)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--n-heads", type=int, default=4, help="4 = the recipe (d_k 32); 1 gives d_k 128")
    ap.add_argument("--skip-part1", action="store_true")
    ap.add_argument("--out", default="/tmp/exp17/attn_scale")
    ap.add_argument("--png", default="")
    ap.add_argument("--jsonl", default="", help="append every JSON line to this file as well")
    args = ap.parse_args()
    torch.set_num_threads(1)

    task, _ = recipe_task("gpt-char", f"{args.out}/data", steps=1)  # for the validation windows
    ids = val_ids(task)
    if not args.skip_part1:
        for r in random_weights_table():  # score variance vs d_k on random vectors and fresh weights
            keep({"part": "random", **r}, [], args.jsonl)
        trained, _ = attnlab.load(CHECKPOINT)
        for r in score_stats(trained.eval(), ids):  # the shipped gpt-char checkpoint (d_k = 32)
            keep({"part": "checkpoint", "d_k": trained.config.head_dim, **r}, [], args.jsonl)

    curves = {}
    for seed in args.seeds:
        for label, scale in (("1/sqrt(d_k)", None), ("no scale", 1.0)):
            task, s = recipe_task("gpt-char", f"{args.out}/data", steps=args.steps, eval_every=args.eval_every,
                                  seed=seed, eval_windows=512, n_heads=args.n_heads)
            seed_all(seed)  # the same initial weights for both arms: attn_scale is not a parameter
            task.model = attnlab.build_model(dataclasses.replace(task.model.config, attn_scale=scale))
            history = train(task, s)
            task.model.eval()
            stats = score_stats(task.model, ids)
            curves[(label, seed)] = evals(history)
            keep({"arm": label, "seed": seed, "d_k": task.model.config.head_dim, "val": evals(history),
                  "first_loss": history[0]["loss"], "layers": stats}, [], args.jsonl)

    if args.png:
        fig, ax = figure()
        for (label, seed), points in curves.items():
            ax.plot(*zip(*points, strict=True), ("-" if label == "1/sqrt(d_k)" else "--"),
                    color=f"C{args.seeds.index(seed)}",
                    label=f"{label}, seed {seed}")
        ax.set_xlabel("step")
        ax.set_ylabel("val loss (nats/char, 512 windows)")
        d_k = task.model.config.head_dim
        ax.set_title(f"gpt-char (d_k {d_k}), with and without 1/sqrt(d_k)", fontsize=10)
        ax.legend(fontsize=8)
        save_figure(fig, [ax], args.png)


if __name__ == "__main__":
    main()
