"""Pictures of a run: its loss curve (loss.png, written by the trainer) and several runs on one axis.

matplotlib is imported only when a picture is drawn, with the Agg backend (no display needed).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch

from attnlab.extras import MissingExtra, require
from attnlab.storage import atomic_write


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl file, one dict per line."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot_losses(metrics_path: str | Path, png_path: str | Path, title: str | None = None) -> Path | None:
    """Training loss (and val_loss where measured) against step, as a PNG (matplotlib, Agg backend)."""
    metrics_path = Path(metrics_path)
    if not metrics_path.is_file():
        return None
    try:
        matplotlib = require("matplotlib", "plots", "loss.png")
    except MissingExtra as exc:  # a core-only install trains all the same; the picture is what it lacks
        warnings.warn(f"{exc} (the run's metrics are in {metrics_path.name})", stacklevel=2)
        return None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    trained = [r for r in records if "loss" in r]  # a fine-tuning run's step 0 holds only its evaluation
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot([r["step"] for r in trained], [r["loss"] for r in trained], lw=0.8, label="train loss")
    val = [(r["step"], r["val_loss"]) for r in records if "val_loss" in r]
    if val:
        ax.plot(*zip(*val, strict=False), "o-", ms=3, label="val loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title or metrics_path.parent.name)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    # replaced, never drawn through a link (loss.png of a run folder may be a link to a file elsewhere)
    atomic_write(Path(png_path), lambda tmp: fig.savefig(tmp, format=Path(png_path).suffix[1:].lower() or "png"))
    plt.close(fig)
    return Path(png_path)


def plot_comparison(runs: dict[str, str | Path], png_path: str | Path, title: str = "", key: str = "loss",
                    smooth: int = 20) -> Path:
    """Several runs' curves on one axis (label -> metrics.jsonl), training loss smoothed by a running mean of
    `smooth` steps; val_loss points where measured. For docs/experiments.md."""
    matplotlib = require("matplotlib", "plots", "plotting runs")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for label, path in runs.items():
        records = read_metrics(path)
        steps = [r["step"] for r in records]
        values = torch.tensor([r[key] for r in records], dtype=torch.float64)
        if smooth > 1 and len(values) >= smooth:
            kernel = torch.ones(smooth, dtype=torch.float64) / smooth
            values = torch.nn.functional.conv1d(values[None, None], kernel[None, None])[0, 0]
            steps = steps[smooth - 1:]
        (line,) = ax.plot(steps, values.tolist(), lw=1.2, label=f"{label} (train, mean of {smooth})")
        val = [(r["step"], r["val_loss"]) for r in records if "val_loss" in r]
        if val:
            ax.plot(*zip(*val, strict=False), "o--", ms=4, color=line.get_color(), label=f"{label} (val)")
    ax.set_xlabel("step")
    ax.set_ylabel(key)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)
    return Path(png_path)
