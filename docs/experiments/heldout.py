"""What the quality experiments share (heads_quality.py, window_mlp.py, position_concat.py).

Every setting must be chosen on a validation split and the result be reported on held-out data
the choice never saw, with at least three seeds. The gpt-char recipe has one held-out split (the last 10% of the
corpus), so it is cut in two here: its first half is the validation split (the Trainer's evaluations, and the
learning-rate choice), its second half the test split (read once per run, after training). Each half is
subsampled to WINDOWS evenly spaced 64-character windows to keep the evaluations cheap on one thread.

The protocol of every arm (`sweep`): train once per learning rate in LRS with seed TUNE_SEED (a draw not among
the reported ones), keep the learning rate with the lowest validation loss, then train seeds 0, 1, 2 at that
rate (each seed changes the initial weights and the order of the batches) and report their test loss. Every run
is one JSON line: phase "tune" or "report".
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from common import evals, keep, train

from attnlab.training import NonFiniteLoss

LRS = (1e-3, 3e-3, 1e-2)
TUNE_SEED = 10
SEEDS = (0, 1, 2)
WINDOWS = 512


def split_heldout(task) -> torch.Tensor:
    """Cut the recipe's held-out windows in two: task.val_windows becomes the validation half (what the Trainer
    evaluates); returns the test half. Both (WINDOWS, seq + 1), evenly spaced over their half."""
    windows = task.val_windows  # (n, seq + 1), consecutive windows of the last 10% of the corpus
    half = len(windows) // 2

    def spaced(part: torch.Tensor) -> torch.Tensor:
        step = max(1, len(part) // WINDOWS)
        return part[::step][:WINDOWS]

    task.val_windows = spaced(windows[:half])
    return spaced(windows[half:])


@torch.no_grad()
def heldout_loss(task, model, windows: torch.Tensor) -> float:
    """The task's own evaluation (mean next-token cross-entropy, nats/char) on other windows."""
    saved, task.val_windows = task.val_windows, windows
    was_training = model.training
    try:
        return task.evaluate(model.eval())["val_loss"]
    finally:
        task.val_windows = saved
        model.train(was_training)


def run(build: Callable, arm: dict, lr: float, seed: int, steps: int, phase: str) -> dict:
    """One training run of an arm: build(lr, seed, steps) -> (task, settings) with task.model ready."""
    task, s = build(lr, seed, steps)
    test = split_heldout(task)
    row = {**arm, **getattr(task.model, "describe", {}), "phase": phase, "lr": lr, "seed": seed, "steps": steps,
           "params": sum(p.numel() for p in task.model.parameters())}
    try:
        history = train(task, s)
    except NonFiniteLoss as e:  # the Trainer stops a run whose loss is no longer finite: that is a result here
        return {**row, "val_loss": None, "test_loss": None, "finite": False, "error": str(e).split(";")[0]}
    grad = [r["grad_norm"] for r in history if "grad_norm" in r]
    return {**row, "val_loss": round(evals(history)[-1][1], 4),
            "test_loss": round(heldout_loss(task, task.model, test), 4),
            "train_loss_last": round(history[-1]["loss"], 4), "grad_norm_max": round(max(grad), 3) if grad else None,
            "finite": True}


def protocol_arguments(ap, out: str):
    """The parsed arguments with --steps, --out, --jsonl, --lr and --seeds added after the script's own (its arms),
    on one torch thread: what a script that runs `sweep` takes (`sweep_as_asked` passes them on)."""
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--out", default=out)
    ap.add_argument("--jsonl", default="")
    ap.add_argument("--lr", type=float, default=None, help="no tuning: train every arm at this rate (a probe)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--tuned-from", default="", metavar="JSONL",
                    help="no tuning: each arm at the rate its tune runs in this results file chose (new seeds of "
                         "an earlier sweep; their runs are phase \"report\")")
    args = ap.parse_args()
    torch.set_num_threads(1)
    return args


def sweep_as_asked(arms: list[tuple[dict, Callable]], args) -> list[dict]:
    """`sweep` with the steps, results file, seeds and fixed rate of protocol_arguments' `args`."""
    return sweep(arms, args.steps, args.jsonl, seeds=args.seeds, fixed_lr=args.lr, tuned_from=args.tuned_from)


def tuned_rate(arm: dict, path: str) -> float:
    """The learning rate an earlier sweep chose for `arm`: its finite tune run with the lowest validation loss
    among the lines of the results file `path` that carry every key of the arm."""
    import json
    from pathlib import Path

    lines = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    tuned = [r for r in lines if r.get("phase") == "tune" and r.get("finite")
             and all(r.get(k) == v for k, v in arm.items())]
    if not tuned:
        raise ValueError(f"{path} has no finite tune run of the arm {arm}")
    return min(tuned, key=lambda r: r["val_loss"])["lr"]


def sweep(arms: list[tuple[dict, Callable]], steps: int, jsonl: str, lrs=LRS, seeds=SEEDS,
          fixed_lr: float | None = None, tuned_from: str = "") -> list[dict]:
    """Per arm: tune the learning rate on the validation half (seed TUNE_SEED), then report `seeds` at it.

    fixed_lr: no tuning; each seed is trained at that rate (phase "probe": a follow-up at a rate an earlier sweep
    chose, e.g. for longer training). tuned_from: no tuning; each arm's seeds at the rate its tune runs in that
    results file chose (phase "report": more seeds of that sweep)."""
    results: list[dict] = []
    for arm, build in arms:
        if fixed_lr is not None:
            for seed in seeds:
                keep(run(build, arm, fixed_lr, seed, steps, "probe"), results, jsonl)
            continue
        if tuned_from:  # the rate an earlier sweep chose: new seeds reported at it, no tuning again
            best = tuned_rate(arm, tuned_from)
            for seed in seeds:
                keep(run(build, arm, best, seed, steps, "report"), results, jsonl)
            continue
        tuned = [run(build, arm, lr, TUNE_SEED, steps, "tune") for lr in lrs]
        for row in tuned:
            keep(row, results, jsonl)
        finite = [r for r in tuned if r["finite"]]
        best = min(finite, key=lambda r: r["val_loss"])["lr"]
        for seed in seeds:
            keep(run(build, arm, best, seed, steps, "report"), results, jsonl)
    return results
