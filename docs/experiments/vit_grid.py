"""Issue 17.1: do a ViT's learned position embeddings form a 2-D grid? Measures every saved checkpoint of
the given vit-mnist runs with the explorer's own statistic (attnlab.explorer.vision.grid_structure: Spearman rho
between cosine similarity and negative grid distance, a 2000-permutation one-sided p, nearest neighbour a grid
neighbour for k of n patches) and draws the position-similarity maps of each run's last checkpoint.

    PYTHONPATH=$PWD python docs/experiments/vit_grid.py /tmp/vis-runs/p4s1 /tmp/vis-runs/p4s3 ... \
        --shipped attnlab/assets/checkpoints/vit-mnist --figure docs/img/exp_vit_grid.png

Each run directory is one `attnlab train vit-mnist ... save_every=1000 keep=10 --out DIR`; its accuracy at a
step comes from DIR/metrics.jsonl (the evaluation on the 1000 held-out MNIST images at that step).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from attnlab.explorer.vision import grid_structure


def positions(ckpt: Path) -> tuple[torch.Tensor, int, dict]:
    """The patch position vectors (grid * grid, d_model) of one checkpoint, [CLS]'s row dropped."""
    cfg = json.loads((ckpt / "config.json").read_text())
    g = cfg["image_size"] // cfg["patch_size"]
    table = load_file(str(ckpt / "model.safetensors"))["positions.weight"].float()
    off = cfg.get("position_offset", 0)
    return table[off + 1: off + 1 + g * g], g, cfg


def inner(p: torch.Tensor, g: int, permutations: int) -> dict | None:
    """The same statistic on the patches off the image's border ring only ((g - 2) x (g - 2) of them). MNIST
    digits sit in the central 20 x 20 pixels, so the border patches are nearly always blank: whatever they learn
    is alike however far apart they are, which a whole-grid rho counts against the grid."""
    if g < 4:
        return None
    keep = [r * g + c for r in range(1, g - 1) for c in range(1, g - 1)]
    return grid_structure(p[keep], g - 2, permutations)


def border_similarity(p: torch.Tensor, g: int) -> tuple[float, float]:
    """Mean cosine similarity among border-ring patches and among inner patches (pairs of distinct patches)."""
    n = torch.nn.functional.normalize(p, dim=-1)
    sim = n @ n.T
    ring = torch.tensor([r in (0, g - 1) or c in (0, g - 1) for r in range(g) for c in range(g)])

    def mean(mask):
        block = sim[mask][:, mask]
        k = len(block)
        return float((block.sum() - block.diagonal().sum()) / (k * (k - 1)))

    return mean(ring), mean(~ring)


def accuracies(run: Path) -> dict[int, float]:
    acc = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "eval_accuracy" in row:
            acc[row["step"]] = row["eval_accuracy"]
    return acc


def settings(run: Path) -> dict:
    """The recipe keys the run was trained with (from any saved step's settings.json)."""
    for f in sorted(run.glob("step-*/settings.json")):
        return json.loads(f.read_text()).get("recipe", {})
    return {}


def command_key(command: str, key: str, default: int) -> int:
    """A key=value of the `attnlab train` command recorded in a shipped trained.json, or the recipe's default."""
    for word in command.split():
        if word.startswith(f"{key}="):
            return int(word.split("=", 1)[1])
    return default


def similarity_tiles(p: torch.Tensor, g: int) -> torch.Tensor:
    """The ViT paper's picture: a g x g mosaic whose tile (r, c) is patch (r, c)'s cosine similarity to every
    patch, as a (g * (g + 1), g * (g + 1)) image with a one-cell NaN gutter between tiles."""
    p = torch.nn.functional.normalize(p, dim=-1)
    sim = (p @ p.T).reshape(g, g, g, g)  # (row, col, other row, other col)
    out = torch.full((g * (g + 1), g * (g + 1)), float("nan"))
    for r in range(g):
        for c in range(g):
            out[r * (g + 1): r * (g + 1) + g, c * (g + 1): c * (g + 1) + g] = sim[r, c]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--shipped", type=Path, help="a checkpoint directory measured as is (the shipped model)")
    ap.add_argument("--figure", type=Path)
    ap.add_argument("--permutations", type=int, default=2000)
    args = ap.parse_args()
    rows, finals = [], []
    if args.shipped:
        p, g, _ = positions(args.shipped)
        trained = json.loads((args.shipped / "trained.json").read_text())
        s = grid_structure(p, g, args.permutations)
        shift = command_key(trained["command"], "max_shift", 1)  # 1: the recipe's default
        rows.append((f"shipped ({args.shipped.name})", g, trained["steps"], shift, trained["final_eval"]["accuracy"],
                     s, inner(p, g, args.permutations), border_similarity(p, g)))
        finals.append((f"shipped ({args.shipped.name}) {g}x{g}, shift {shift}", p, g, s))
    for run in args.runs:
        acc = accuracies(run)
        steps = sorted(run.glob("step-*"))
        shift = settings(run).get("max_shift", "?")
        for ckpt in steps:
            step = int(ckpt.name.split("-")[1])
            p, g, _ = positions(ckpt)
            s = grid_structure(p, g, args.permutations)
            rows.append((run.name, g, step, shift, acc.get(step), s, inner(p, g, args.permutations),
                         border_similarity(p, g)))
        if steps:
            finals.append((f"{run.name}: {g}x{g}, shift {shift}, {step} steps", p, g, s))
    print("| run | grid | steps | max_shift | test accuracy | rho | p | NN is a grid neighbour (chance) | NN p "
          "| inner rho | inner p | inner NN (chance) | mean sim ring / inner |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, g, step, shift, acc, s, i, (ring, mid) in rows:
        a = f"{acc:.3f}" if acc is not None else "-"
        inside = (f"{i['rho']:+.3f} | {i['p']:.4f} | {i['nearest_is_neighbour']} / {i['patches']} "
                  f"({i['chance_neighbours']:.1f})") if i else "- | - | -"
        print(f"| {name} | {g}x{g} | {step} | {shift} | {a} | {s['rho']:+.3f} | {s['p']:.4f} | "
              f"{s['nearest_is_neighbour']} / {s['patches']} ({s['chance_neighbours']:.1f}) | {s['nearest_p']:.4f} "
              f"| {inside} | {ring:.2f} / {mid:.2f} |")
    if args.figure and finals:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(finals), figsize=(4.2 * len(finals), 4.6), squeeze=False)
        for ax, (title, p, g, s) in zip(axes[0], finals, strict=True):
            im = ax.imshow(similarity_tiles(p, g).numpy(), cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
            ax.set_title(f"{title}\nrho {s['rho']:+.2f}, p {s['p']:.3g}, NN {s['nearest_is_neighbour']}/{s['patches']}",
                         fontsize=8)
            ax.set_xticks([]), ax.set_yticks([])
        fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="cosine similarity of position embeddings")
        fig.suptitle("Tile (r, c): patch (r, c)'s position-embedding similarity to every patch", fontsize=9)
        args.figure.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.figure, dpi=130, bbox_inches="tight")
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
