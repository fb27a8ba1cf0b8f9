"""What the experiment scripts share: one-thread training through attnlab.training, and small plots.

Every run goes through attnlab's own Trainer (AdamW groups, warmup + cosine, clipping, evaluations), either on
a named recipe (`recipe_task`) or on a Task written in the script. Runs are not checkpointed: `train` returns
the metrics history (one dict per step, evaluations merged in).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import attnlab
from attnlab.training import Trainer, TrainSettings
from attnlab.training.recipes import get_recipe
from attnlab.training.settings import resolve_params


class _Trainer(Trainer):
    def save(self):  # experiments keep their metrics, not their weights (models written with torch.nn cannot
        return None  # be saved as attnlab checkpoints anyway)


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def settings(recipe: str | None = None, **overrides: Any) -> tuple[TrainSettings, dict[str, Any]]:
    """TrainSettings (+ recipe keys) with one thread and no plot unless overridden."""
    overrides = {"threads": 1, "plot": False, **overrides}
    if recipe is None:
        return TrainSettings(**overrides), {}
    return resolve_params(get_recipe(recipe), {k: str(v) for k, v in overrides.items()})


def recipe_task(recipe: str, out: str | Path, **overrides: Any):
    """(task, settings) of a named recipe, built as `attnlab train` builds it (same seeding, same data)."""
    s, params = settings(recipe, **overrides)
    seed_all(s.seed)
    task = get_recipe(recipe).build({**params, "batch_size": s.batch_size, "tokenizer": None, "out_dir": str(out)})
    first_windows(task, params)
    return task, s


def first_windows(task, params: dict[str, Any]) -> None:
    """Score a text recipe's task on the FIRST eval_windows validation windows, as every run on the page was.

    Since 2026-12-07 gpt-char and gpt-bpe score eval_windows windows evenly spaced over the held-out split (the
    same training, other windows: seed 0 of section 16 at 300 steps gives val 2.2225 there against the page's
    2.4115). The page's figures were measured on the first ones, so runs made later (new seeds) keep them and
    compare with the earlier seeds on the same windows. Nothing changes where eval_windows covers the split."""
    if getattr(task, "val_windows", None) is None or not params.get("eval_windows") or "seq_len" not in params:
        return
    from attnlab.training.recipes import text

    inputs, targets = task.data.windows("val", params["seq_len"], params["eval_windows"])  # the first N, (n, seq)
    task.val_windows = torch.cat([inputs, targets[:, -1:]], dim=1)  # (n, seq + 1), as CausalLMTask builds it
    task.bigram = text.bigram_loss(text.split_pieces(task.data, "train", overlap=1), task.val_windows,
                                   task.tokenizer.vocab_size)


def train(task, s: TrainSettings, out: str | Path | None = None) -> list[dict[str, Any]]:
    """Train task.model with attnlab's Trainer; returns the per-step records."""
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix="attnlab-exp-"))
    trainer = _Trainer(task, s, out, quiet=True)
    trainer.fit()
    return trainer.history


def paired_arm(out: str | Path, seed: int, change, **overrides: Any):
    """(task, history) of one arm of a paired comparison on the gpt-char recipe built with `overrides`: its model
    built again from `seed`, so every arm of a seed starts from the same weights and draws the same batches;
    `change(model)` (None for the baseline arm) applied before training."""
    task, s = recipe_task("gpt-char", out, seed=seed, **overrides)
    seed_all(seed)
    task.model = attnlab.build_model(task.model.config)  # the same initial weights in both arms
    if change is not None:
        change(task.model)
    return task, train(task, s)


def swap_attention(model, attention_class) -> None:
    """Every block's attention replaced by `attention_class(model.config)` holding the same weights: how a script
    tries a changed attention (a subclass of attnlab's Attention) without changing the library."""
    for block in model.blocks:
        new = attention_class(model.config)
        new.load_state_dict(block.attn.state_dict())
        block.attn = new


@torch.no_grad()
def honest_loss(model, windows: torch.Tensor, length: int) -> float:
    """Cross-entropy of the last position of each window cut to `length` tokens: that position has no future key,
    so a model that sees the future in training (no mask, a mask after the softmax) is scored as in generation."""
    logits = model(windows[:, :length]).logits[:, -1].float()  # (n, vocab)
    return float(F.cross_entropy(logits, windows[:, length]))


def shipped_models(ap: argparse.ArgumentParser | None = None, **options: Any):
    """(the parsed arguments, --jsonl among them; the explorer's registry of the shipped models, built with
    `options`), on one torch thread: how a script that measures trained models, without training, starts.
    ap: a parser that already holds the script's own arguments."""
    ap = ap or argparse.ArgumentParser()
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from attnlab.explorer.server.registry import build_registry

    return args, build_registry(**options)


def evals(history: list[dict[str, Any]], key: str = "val_loss") -> list[tuple[int, float]]:
    return [(r["step"], r[key]) for r in history if key in r]


def figure(width: float = 5.5, height: float = 3.4, ncols: int = 1):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width, height), dpi=90)
    return fig, axes


def save_figure(fig, axes, png: str | Path) -> None:
    """Light grids on every panel, a tight layout, and the PNG written: how every figure of these pages ends."""
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png)


def add_sweep_arguments(ap, out: str) -> None:
    """--jsonl, --out, --png and --plot-only: what a sweep script takes besides its own settings."""
    ap.add_argument("--jsonl", default="", help="append one JSON line per finished run to this file")
    ap.add_argument("--out", default=out)
    ap.add_argument("--png", default="")
    ap.add_argument("--plot-only", nargs="+", default=[], metavar="JSONL",
                    help="draw --png from the JSON lines of earlier runs, without training")


def earlier_runs(paths: list[str]) -> list[dict[str, Any]]:
    """The runs recorded as JSON lines by --jsonl (for --plot-only)."""
    import json

    return [json.loads(line) for p in paths for line in open(p) if line.startswith("{")]


def keep(row: dict[str, Any], results: list[dict[str, Any]], jsonl: str) -> None:
    """A finished run: printed as a JSON line, kept in results, appended to --jsonl (a cut-off sweep keeps it)."""
    import json

    line = json.dumps(row)
    print(line, flush=True)
    results.append(row)
    if jsonl:
        with open(jsonl, "a") as f:
            f.write(line + "\n")


def write_jsonl(lines: list[str], path: str | Path | None, echo: bool = True) -> None:
    """Print the JSON lines (unless the script printed them as it went) and, given a path, write them there: the
    results file committed beside the script, which tests/test_experiments_trace.py checks the doc against."""
    if echo:
        for line in lines:
            print(line)
    if path:
        Path(path).write_text("".join(line + "\n" for line in lines))
