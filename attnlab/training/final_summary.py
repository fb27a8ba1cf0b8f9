"""The words `attnlab train` ends with: how the run went, where it is saved, and what to type next.

Why words and not the result's JSON: a person who has just trained wants the one number that says whether it
learned (the validation loss, beside the baseline a model that learned nothing beats), where the checkpoint is and
the next command; the JSON, with every number, stays in OUT/result.json for scripts and tests.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from attnlab.training.progress import duration


def epoch_words(epoch: dict[str, Any]) -> str:
    """"4.1% of an epoch (24,000 of 587,666 windows of 64 tokens drawn); more: steps=N, or epochs=1 (48,973
    steps)" from the result's "epoch" record (Trainer: examples, unit, per_step, covered)."""
    covered, examples, per_step = float(epoch["covered"]), int(epoch["examples"]), int(epoch["per_step"])
    percent = covered * 100  # two significant digits below 0.1%: 12 of 595,491 windows is 0.002%, not 0.0%
    amount = f"{percent:.1f}%" if percent >= 0.1 else f"{percent:.2g}%"
    amount = f"{amount} of an epoch" if covered < 1 else f"{covered:,.2f} epochs"
    drawn = round(covered * examples)
    words = f"{amount} ({drawn:,} of {examples:,} {epoch['unit']} drawn)"
    if covered < 1:
        words += f"; more: steps=N, or epochs=1 ({math.ceil(examples / per_step):,} steps)"
    return words


def _number(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def final_summary(result: dict[str, Any], *, more: str | None = None) -> list[str]:
    """The closing lines for `result` (what run_train returns); `more`: the command that trains on from the last
    checkpoint (the CLI builds it from its own arguments), shown unless the run stopped early."""
    out = result.get("out", "")
    recipe = result.get("recipe", "the run")
    step = int(result.get("step", 0))
    steps = f"{step:,} step{'' if step == 1 else 's'}"
    lines = [f"{recipe}: {steps} in {duration(result.get('elapsed_s', 0.0))} (training "
             f"{duration(result.get('train_s', 0.0))}, evaluations {duration(result.get('eval_s', 0.0))})"]
    metrics = dict(result.get("eval") or {})
    baseline = metrics.pop("bigram_val_loss", None)
    if "val_loss" in metrics:
        loss = metrics.pop("val_loss")
        against = (f", against {baseline:.4f} for the bigram baseline (a model that learned only which token "
                   "follows which)") if baseline is not None else ""
        lines.append(f"  val_loss   {loss:.4f}{against}")
    before = (result.get("start_eval") or {}).get("val_loss")
    if before is not None:
        start = (result.get("start") or {}).get("init_from", "the loaded model")
        lines.append(f"  before     val_loss {before:.4f} at step 0 ({start} as loaded, before fine-tuning)")
    if metrics:
        lines.append("  eval       " + ", ".join(f"{k} {_number(v)}" for k, v in metrics.items()))
    if result.get("best_step") is not None:
        lines.append(f"  best       val_loss {result['best_val_loss']:.4f} at step {result['best_step']:,}: "
                     f"{result['best_checkpoint']}")
    if result.get("stopped_early"):
        lines.append(f"  stopped    early at step {step:,} of {result.get('steps', step):,}: no "
                     f"lower val_loss in {result['patience']} evaluations (patience={result['patience']})")
    if result.get("epoch"):
        lines.append(f"  data       {epoch_words(result['epoch'])}")
    if result.get("checkpoint"):
        lines.append(f"  saved      {result['checkpoint']} (the latest); every number in {out}/result.json")
    if result.get("samples"):
        lines.append(f"  samples    {out}/samples.txt")
    lines.append("next:")
    if result.get("topology") == "decoder":
        lines.append(f"  {shlex.join(['attnlab', 'generate', out, '--prompt', 'The '])}")
    lines.append(f"  {shlex.join(['attnlab', 'explore', out])}")
    if more and step and not result.get("stopped_early"):
        lines.append(f"  {more}   # train on from step {step:,}, at the final learning rate")
    return lines
