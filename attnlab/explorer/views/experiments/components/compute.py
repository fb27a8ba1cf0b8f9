"""Experiments views: which component carries the answer (patching by component) and who writes it into the
logits (direct logit attribution). JSON-ready answers of plain lists and rounded floats, like experiments.py.

Both read one number: the logit difference answer - contrast at the read position (the name-swap task's
" Mary" - " John"). Default answer: the model's top prediction on the clean sentence; default contrast: the
corrupted sentence's top prediction when it differs, else the clean sentence's second.

- component_grid: the clean sentence runs again with one component replaced, per cell; the cell is how the
  logit difference moves. Components: a block's attention output at one position (all its heads' z there), its
  MLP output at one position (the MLP's hidden activations there), one head at every position (its z). z and
  the hidden activations enter W_O and the MLP's output matrix linearly, so replacing them replaces the outputs
  (up to those matrices' biases, which stay). Replacement (MODES): zero, mean over this sentence's positions,
  or resample from the corrupted sentence. method "attribution" estimates every cell from one forward and one
  backward (attnlab.attribution_patch); "exact" runs every cell (attnlab.exact_patch), streamed.
- logit_attribution: attnlab.direct_logit_attribution as a layers x heads grid, an MLP column and the sum check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import check_range, encode, token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.experiments.pairs import grid_of, prepare, round_or_none, top_tokens
from attnlab.interventions import Cancelled
from attnlab.interventions.attribution import attribution_patch, exact_patch, site_names
from attnlab.interventions.logit_attribution import direct_logit_attribution
from attnlab.interventions.readouts import CleanRun, clean_run

GRIDS = ("attn", "mlp", "head")
MODES = {
    "zero": "zero: the component's values (each head's z, the MLP's hidden activations) are replaced by zeros, so "
            "only its output bias is left.",
    "mean": "mean: each value is replaced by its average over this sentence's positions (up to the read one: a "
            "decoder's later tokens are not run).",
    "resample": "resample: each value is replaced by the same activation from the corrupted sentence (names "
                "swapped), at the same position.",
}
METHODS = ("attribution", "exact")


def _answer_pair(lm: Loaded, clean_logp: torch.Tensor, corrupted_logp: torch.Tensor | None, target,
                 contrast) -> tuple[int, int]:
    """-> (answer, contrast) token ids: the defaults of the module docstring, or the given ones, checked."""
    vocab = lm.model.config.vocab_size
    answer = int(clean_logp.argmax()) if target is None else check_range("target token id", target, vocab)
    if contrast is None:
        other = int(corrupted_logp.argmax()) if corrupted_logp is not None else answer
        contrast = other if other != answer else int(clean_logp.topk(2).indices[1])
    contrast = check_range("contrast token id", contrast, vocab)
    if contrast == answer:
        raise InputError("the contrast token is the answer itself: their logit difference is always 0; pick "
                         "another contrast token")
    return answer, contrast


def _token(lm: Loaded, i: int) -> dict[str, Any]:
    return {"token": token_text(lm, i), "id": i}


def _diff(logp: torch.Tensor, answer: int, contrast: int) -> float | None:
    return round_or_none(float(logp[answer] - logp[contrast]))


def _sources(model, clean_ids, corrupted_ids, position, names, mode) -> tuple[CleanRun, CleanRun, CleanRun | None]:
    """-> (the clean run: its values and residual streams; what each cell copies in; the corrupted run or None).

    zero and mean sources are made from the clean run's own values (module docstring); resample's is the
    corrupted run's."""
    run = clean_run(model, clean_ids, position, names=names + ["blocks.*.resid_pre"])
    corrupted = clean_run(model, corrupted_ids, position, names=names) if corrupted_ids is not None else None
    if mode == "resample":
        return run, corrupted, corrupted
    values = {n: run.recorded[n] for n in names}  # (1, seq, heads, d_head) or (1, seq, d_ff)
    if mode == "zero":
        source = {n: torch.zeros_like(v) for n, v in values.items()}
    else:
        source = {n: v.mean(dim=1, keepdim=True).expand_as(v) for n, v in values.items()}
    return run, CleanRun(run.logprobs, source), corrupted


def component_grid(lm: Loaded, clean_text: str, corrupted_text: str | None, *, mode: str = "resample",
                   method: str = "attribution", grids=GRIDS, position: int | None = None,
                   target: int | None = None, contrast: int | None = None, batch_size: int = 64,
                   progress: Callable[[int, int], None] | None = None,
                   cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Patching by component (module docstring): {grid: cells}, each cell the change in the logit difference
    answer - contrast when that component of the clean run is replaced (negative: the component carried it).

    attn and mlp: (layers, positions), null after a decoder's read position (it cannot change the answer);
    head: (layers, heads). Cancelling an exact run answers the cells done so far (null elsewhere)."""
    if mode not in MODES or method not in METHODS:
        raise InputError(f"mode={mode!r}, method={method!r}: allowed modes {', '.join(MODES)}; methods "
                         f"{', '.join(METHODS)}")
    grids = tuple(dict.fromkeys(grids))
    if not grids or any(g not in GRIDS for g in grids):
        raise InputError(f"grids={list(grids)!r}: allowed a non-empty selection of {', '.join(GRIDS)}")
    clean_ids, clean_tokens, position, kind = prepare(lm, clean_text, position)
    corrupted_ids, corrupted_tokens = None, None
    if corrupted_text is not None:
        n = len(encode(lm, corrupted_text)[0])
        if n != clean_ids.shape[1]:
            raise InputError(f"the clean sentence has {clean_ids.shape[1]} tokens and the corrupted one {n}: "
                             "resampling copies position p to position p, so they must have the same number of "
                             "tokens")
        corrupted_ids, corrupted_tokens, _, _ = prepare(lm, corrupted_text, position)
    elif mode == "resample":
        raise InputError("mode 'resample' copies values from the corrupted sentence: give one (same token count)")
    model = lm.model
    names = site_names(model, grids)
    run, source, corrupted = _sources(model, clean_ids, corrupted_ids, position, names, mode)
    answer, contrast = _answer_pair(lm, run.logprobs[0], corrupted.logprobs[0] if corrupted else None, target,
                                    contrast)
    source_ids = corrupted_ids if mode == "resample" else clean_ids
    out, done = _cells(model, source_ids, clean_ids, answer, contrast, position, grids, method, batch_size,
                       source, run, progress, cancelled)
    seq, last = clean_ids.shape[1], position + 1 if kind == "next" else clean_ids.shape[1]
    cells = {g: grid_of(t) for g, t in out.items()}
    for g in ("attn", "mlp"):
        for row in cells.get(g, []):
            row[last:] = [None] * (seq - last)
    return {"model": lm.id, "clean_tokens": clean_tokens, "corrupted_tokens": corrupted_tokens,
            "position": position, "predicts": kind, "mode": mode, "mode_text": MODES[mode], "method": method,
            "answer": _token(lm, answer), "contrast": _token(lm, contrast),
            "clean_diff": _diff(run.logprobs[0], answer, contrast),
            "corrupted_diff": _diff(corrupted.logprobs[0], answer, contrast) if corrupted else None,
            "layers": len(model.blocks), "heads": model.config.n_heads, "positions": seq, "grids": cells,
            "cancelled": not done}


def _cells(model, source_ids, run_ids, answer, contrast, position, grids, method, batch_size, source, run,
           progress, cancelled) -> tuple[dict[str, torch.Tensor], bool]:
    """-> ({grid: (layers, x) effects, NaN where not run}, whether every cell ran). Progress counts every grid."""
    if method == "attribution":
        return attribution_patch(model, source_ids, run_ids, answer, contrast=contrast, position=position,
                                 grids=grids, clean=source), True
    n_layers, seq = len(model.blocks), run_ids.shape[1]
    widths = {g: model.config.n_heads if g == "head" else (position + 1 if model.causal else seq) for g in grids}
    total, offset = sum(n_layers * w for w in widths.values()), 0
    out: dict[str, torch.Tensor] = {}
    ran = [0]  # cells of the current grid done (exact_patch runs them in layer order)
    for grid in grids:
        def step(done: int, _: int, offset=offset) -> None:
            ran[0] = done
            if progress is not None:
                progress(offset + done, total)

        ran[0] = 0
        try:
            out[grid] = exact_patch(model, source_ids, run_ids, answer, contrast=contrast, position=position,
                                    grids=[grid], batch_size=batch_size, progress=step, cancelled=cancelled,
                                    clean=source, corrupted=run)[grid]
        except Cancelled as stop:
            out[grid] = _unfinished(stop.partial, ran[0], widths[grid])
            for rest in grids[grids.index(grid) + 1:]:
                out[rest] = torch.full((n_layers, model.config.n_heads if rest == "head" else seq), math.nan)
            return out, False
        offset += n_layers * widths[grid]
    return out, True


def _unfinished(partial: torch.Tensor, done: int, width: int) -> torch.Tensor:
    """A cancelled grid (layers, x): its first `done` cells in layer order kept (`width` run per layer), the
    rest NaN (sent as null)."""
    out = partial.clone().float()
    for layer in range(out.shape[0]):
        out[layer, max(0, done - layer * width):] = math.nan
    return out


def logit_attribution(lm: Loaded, text: str, *, position: int | None = None, target: int | None = None,
                      contrast: int | None = None, k: int = 10) -> dict[str, Any]:
    """Direct logit attribution at the read position: a layers x heads grid, the MLPs, W_O's biases, the
    embedding and the constant (the final norm's beta and the head's bias), their sum beside the model's own
    logit difference, and the top-k predictions (the page's answer and contrast choices)."""
    ids, tokens, position, kind = prepare(lm, text, position)
    model = lm.model
    run = clean_run(model, ids, position)
    answer, contrast = _answer_pair(lm, run.logprobs[0], None, target, contrast)
    dla = direct_logit_attribution(model, ids, answer, contrast=contrast, position=position)
    number = (lambda key: round_or_none(float(dla[key])))
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind,
            "answer": _token(lm, answer), "contrast": _token(lm, contrast), "top": top_tokens(lm, run.logprobs[0], k),
            "layers": len(model.blocks), "heads": model.config.n_heads,
            "grid": grid_of(dla["heads"]), "mlp": [round_or_none(v) for v in dla["mlp"].tolist()],
            "attn_bias": [round_or_none(v) for v in dla["attn_bias"].tolist()],
            "embed": number("embed"), "constant": number("constant"), "total": number("total"),
            "logit_diff": number("logit_diff"), "scale": number("scale"),
            "norm": model.config.norm if getattr(model, "final_norm", None) is not None else None}
