"""The first answer of "Which heads matter" and of patching: a gradient estimate of every cell at once, then the
exact values of the cells worth checking, streamed as each batched forward finishes.

Why two stages: the exact grids cost one forward per head or cell (270 heads, 600 cells on SmolLM2 with 20
tokens: seconds), the estimate one forward and one backward (attribution patching: the first-order term
(a_edited - a) . d metric / da). The estimate is shown at once and marked as one; the exact values of the top
cells by |estimate| and a few random others then arrive, with the rank correlation of the checked cells and the
cells where the two disagree, so a learner sees where the linear approximation holds and where it does not
(a saturated softmax, two paths that cancel, large early edits).

- heads(...): the head grid of ablation (units: drop in log P(target) when the head is switched off, the exact
  sweep's units: clean - ablated). The edit is z -> 0 (zero) or z -> its mean over the text (mean); the
  gradient is taken on the clean run, so estimate = (z - fill) . d log P / dz.
- patching(...): the residual-stream grid (layers x positions) of causal tracing (units: change in log
  P(target) when the clean residual stream entering that layer at that position is copied into the corrupted
  run: log P(patched) - log P(corrupted)); attnlab.attribution_patch's resid_pre grid.

Both report through emit(line) (a dict per line) and stop at the next batch when cancelled() answers True.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.experiments.pairs import grid_of, prepare, prepare_pair, round_or_none, target_id
from attnlab.interventions import CellPatch, HeadAblation, clean_run, head_means, intervene
from attnlab.interventions.attribution import attribution_patch, site_gradients, site_names
from attnlab.interventions.readouts import logprobs_from

TOP = 12  # the cells by |estimate| checked exactly
EXTRA = 4  # plus this many others drawn at random (a fixed seed: the same text checks the same cells)
MAX_TOP, MAX_EXTRA = 64, 16
SEED = 0
METHOD = ("attribution patching: a first-order (gradient) approximation from one forward and one backward, "
          "(edited value - value) . d log P / d value; exact only for small, linear changes")
Emit = Callable[[dict[str, Any]], None]


def pick_cells(estimate: torch.Tensor, top: int, extra: int, valid: torch.Tensor | None = None,
               seed: int = SEED) -> list[tuple[int, int]]:
    """The top cells by |estimate| (largest first), then `extra` other cells drawn with a fixed seed.

    valid: a bool mask of the cells that can be run (a decoder's positions after the read one cannot)."""
    rows, cols = estimate.shape
    order = estimate.abs().flatten().argsort(descending=True, stable=True).tolist()
    ok = [i for i in order if valid is None or bool(valid.flatten()[i])]
    chosen, rest = ok[:top], ok[top:]
    chosen += random.Random(seed).sample(rest, min(extra, len(rest)))
    return [(i // cols, i % cols) for i in chosen]


def _ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (as Spearman's coefficient wants)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation of two equal-length lists; None under 3 values or when one is constant."""
    if len(a) < 3:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va, vb = sum((x - ma) ** 2 for x in ra), sum((y - mb) ** 2 for y in rb)
    return None if va == 0 or vb == 0 else cov / math.sqrt(va * vb)


def disagrees(exact: float, estimate: float, scale: float) -> bool:
    """A cell whose estimate is off by more than 30% of the larger of the two AND by more than 5% of the largest
    value in the grid (small cells' relative errors are noise a reader cannot see)."""
    gap = abs(exact - estimate)
    return gap > 0.3 * max(abs(exact), abs(estimate)) and gap > 0.05 * scale


def _summary(checked: list[list], scale: float) -> dict[str, Any]:
    """What the streamed cells say so far: their rank correlation and the cells that disagree."""
    exact = [c[2] for c in checked]
    est = [c[3] for c in checked]
    rho = spearman(exact, est)
    return {"spearman": None if rho is None else round_or_none(rho, 4),
            "disagree": [[c[0], c[1]] for c in checked if disagrees(c[2], c[3], scale)]}


def _stream_exact(cells: list[tuple[int, int]], estimate: torch.Tensor, run_layer, emit: Emit, cancelled,
                  ) -> tuple[list[list], bool]:
    """Runs the cells one layer per batched forward (a forward starts at its layer), the layers holding the
    largest estimates first; emits {"exact": [[layer, x, exact, estimate], ...], "done", "total", ...} after
    each. -> (every checked cell, finished)."""
    by_layer: dict[int, list[int]] = {}
    for layer, x in cells:
        by_layer.setdefault(layer, []).append(x)
    scale = float(estimate.abs().max()) if estimate.numel() else 0.0
    checked: list[list] = []
    for layer, xs in by_layer.items():  # insertion order: the layer of the largest estimate first
        if cancelled is not None and cancelled():
            return checked, False
        values = run_layer(layer, xs)  # (len(xs),)
        new = [[layer, x, round_or_none(float(v)), round_or_none(float(estimate[layer, x]))] for x, v in zip(xs, values,
                                                                                                strict=True)]
        checked += new
        scale = max(scale, *(abs(c[2]) for c in new))
        emit({"exact": new, "done": len(checked), "total": len(cells), **_summary(checked, scale)})
    return checked, True


def _limits(top: int, extra: int) -> None:
    for name, value, upper in (("top", top, MAX_TOP), ("extra", extra, MAX_EXTRA)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= upper:
            raise InputError(f"{name}={value!r}: allowed 0..{upper}")


# --------------------------------------------------------------------------------------------- heads
def head_estimate(model, ids: torch.Tensor, position: int, target: int, mode: str,
                  means: dict[int, torch.Tensor]) -> torch.Tensor:
    """(layers, heads) estimated drop in log P(target) when each head alone is switched off: one forward and one
    backward on the text. Each head's z over the positions that reach `position` is replaced by `fill` (zeros,
    or means[layer][head]); drop = log P(clean) - log P(ablated) ~= (z - fill) . d log P / dz."""
    names = [f"blocks.{layer}.attn.z" for layer in range(len(model.blocks))]
    values, grads = site_gradients(model, ids, position, names, target, None)
    out = torch.zeros(len(names), model.config.n_heads, dtype=torch.float64)
    for layer, name in enumerate(names):
        z, g = values[name].double(), grads[name].double()  # (1, seq, heads, d_head)
        fill = means[layer].double()[None, None] if mode == "mean" else torch.zeros((), dtype=torch.float64)
        out[layer] = ((z - fill) * g)[0].sum(dim=(0, 2))  # (heads,)
    return out.float()


def heads(lm: Loaded, text: str, *, position: int | None = None, target: int | None = None, mode: str = "zero",
          top: int = TOP, extra: int = EXTRA, emit: Emit, cancelled: Callable[[], bool] | None = None,
          ) -> dict[str, Any]:
    """The head grid as an estimate (emitted first: {"estimate": {...}}), then the exact drop of the chosen heads
    (head_sweep's numbers) streamed per layer. -> the final answer: every checked cell and their agreement."""
    _limits(top, extra)
    if mode not in ("zero", "mean"):
        raise InputError(f"mode={mode!r}: allowed 'zero' or 'mean'")
    ids, tokens, position, kind = prepare(lm, text, position)
    model = lm.model
    n_layers, n_heads = len(model.blocks), model.config.n_heads
    run = clean_run(model, ids, position, names=["blocks.*.resid_pre"])  # the target, and where exact rows start
    clean = run.logprobs[0]
    t = target_id(lm, target, clean)
    means = head_means(model, ids, range(n_layers)) if mode == "mean" else {}
    estimate = head_estimate(model, ids, position, t, mode, means)
    cells = pick_cells(estimate, top, extra)
    head = {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "mode": mode,
            "target": {"token": token_text(lm, t), "id": t, "prob": round_or_none(math.exp(float(clean[t]))),
                       "logprob": round_or_none(float(clean[t]))}, "layers": n_layers, "heads": n_heads}
    emit({"estimate": {**head, "kind": "estimate", "method": METHOD, "grid": grid_of(estimate),
                       "cells": [list(c) for c in cells]}})

    def run_layer(layer: int, hs: list[int]) -> torch.Tensor:
        mask = torch.zeros(len(hs), n_heads, dtype=torch.bool)  # (row, head): row r switches off hs[r]
        mask[torch.arange(len(hs)), hs] = True
        with intervene(model, {f"blocks.{layer}.attn.z": HeadAblation(mask, means.get(layer))}):
            ablated = logprobs_from(model, ids, run.recorded, layer, len(hs), position)[:, t]
        return clean[t] - ablated

    checked, finished = _stream_exact(cells, estimate, run_layer, emit, cancelled)
    return _final(head, estimate, checked, finished, len(cells))


def _final(head: dict, estimate: torch.Tensor, checked: list[list], finished: bool, total: int) -> dict[str, Any]:
    scale = max([float(estimate.abs().max())] + [abs(c[2]) for c in checked])
    top10 = _top_agreement(checked)
    return {**head, "kind": "estimate+exact", "method": METHOD, "grid": grid_of(estimate), "exact": checked,
            "checked": len(checked), "total": total, "top10_agreement": top10, **_summary(checked, scale),
            "cancelled": not finished}


def _top_agreement(checked: list[list], k: int = 10) -> float | None:
    """Of the checked cells, the share of the k largest by |exact| that are also among the k largest by
    |estimate| (1.0: the estimate ranks the important cells right)."""
    if len(checked) < k:
        return None
    by_exact = {(c[0], c[1]) for c in sorted(checked, key=lambda c: -abs(c[2]))[:k]}
    by_est = {(c[0], c[1]) for c in sorted(checked, key=lambda c: -abs(c[3]))[:k]}
    return round_or_none(len(by_exact & by_est) / k, 4)


# --------------------------------------------------------------------------------------------- patching
def patching(lm: Loaded, clean_text: str, corrupted_text: str, *, position: int | None = None,
             target: int | None = None, top: int = TOP, extra: int = EXTRA, emit: Emit,
             cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
    """The residual-stream patching grid (layers x positions) as an estimate first, then the exact change in log
    P(target) of the chosen cells (trace_residual's runs: log P(patched) - log P(corrupted)), streamed."""
    _limits(top, extra)
    clean_ids, clean_tokens, corrupted_ids, corrupted_tokens, position, kind = prepare_pair(
        lm, clean_text, corrupted_text, position)
    model = lm.model
    clean = clean_run(model, clean_ids, position, names=site_names(model, ["resid_pre"]))
    corrupted = clean_run(model, corrupted_ids, position, names=["blocks.*.resid_pre"])
    t = target_id(lm, target, clean.logprobs[0])
    base = corrupted.logprobs[0, t]
    estimate = attribution_patch(model, clean_ids, corrupted_ids, t, position=position, grids=["resid_pre"],
                                 clean=clean)["resid_pre"]  # (layers, seq)
    seq = clean_ids.shape[1]
    last = position + 1 if kind == "next" else seq  # a decoder's later positions: 0, never run
    valid = torch.zeros_like(estimate, dtype=torch.bool)
    valid[:, :last] = True
    cells = pick_cells(estimate, top, extra, valid)
    top_logp = clean.logprobs[0, t]
    head = {"model": lm.id, "clean_tokens": clean_tokens, "corrupted_tokens": corrupted_tokens,
            "position": position, "predicts": kind, "site": "resid_pre",
            "target": {"token": token_text(lm, t), "id": t, "prob_clean": round_or_none(math.exp(float(top_logp))),
                       "prob_corrupted": round_or_none(math.exp(float(base))),
                       "logprob_gap": round_or_none(float(top_logp - base))},
            "layers": estimate.shape[0], "positions": seq}
    emit({"estimate": {**head, "kind": "estimate", "method": METHOD, "grid": grid_of(estimate),
                       "cells": [list(c) for c in cells]}})

    def run_layer(layer: int, ps: list[int]) -> torch.Tensor:
        name = f"blocks.{layer}.resid_pre"
        edit = CellPatch(clean.recorded[name], torch.arange(len(ps)), torch.tensor(ps))
        with intervene(model, {name: edit}):
            patched = logprobs_from(model, corrupted_ids, corrupted.recorded, layer, len(ps), position)[:, t]
        return patched - base

    checked, finished = _stream_exact(cells, estimate, run_layer, emit, cancelled)
    return _final(head, estimate, checked, finished, len(cells))
