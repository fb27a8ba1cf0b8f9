"""Switch heads off (zero or mean): the top-5 and P(target) before and after, from one forward."""

from __future__ import annotations

import math
from typing import Any

from attnlab.errors import InputError
from attnlab.explorer.server.common import check_range, token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.experiments.pairs import prepare, round_or_none, target_id, top_tokens
from attnlab.interventions import ablate_heads, before_after


def _heads(value) -> list[tuple[int, int]]:
    """[[layer, head], ...] or [{"layer": l, "head": h}, ...] (the page's JSON) -> [(layer, head)]."""
    if not isinstance(value, list) or not value:
        raise InputError("heads: give a list of [layer, head] pairs (at least one)")
    pairs = []
    for item in value:
        if isinstance(item, dict):
            item = (item.get("layer"), item.get("head"))
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InputError(f"heads: {item!r} is not a [layer, head] pair")
        pairs.append(tuple(item))
    return pairs


def _check_heads(lm: Loaded, pairs: list[tuple]) -> list[tuple[int, int]]:
    """Each (layer, head) within this model, else OutOfRange naming its layers and heads (the same 422 every
    Experiments view gives for a layer or head the model lacks)."""
    cfg = lm.model.config
    return [(check_range("layer", layer, cfg.n_layers), check_range("head", head, cfg.n_heads))
            for layer, head in pairs]


def ablation(lm: Loaded, text: str, heads, *, mode: str = "zero", position: int | None = None,
             target: int | None = None) -> dict[str, Any]:
    """Switch `heads` off ([[layer, head], ...]); the prediction at `position` before and after.

    mode "mean" replaces each head's output by its mean over this text's positions.
    """
    ids, tokens, position, kind = prepare(lm, text, position)
    model = lm.model
    pairs = _check_heads(lm, _heads(heads))
    # row 0 unchanged, row 1 ablated: one forward, the text run once up to the first ablated layer
    edits = ablate_heads(model, pairs, mode=mode, reference=ids if mode == "mean" else None, rows=[1])
    first = min(int(name.split(".")[1]) for name in edits)  # blocks.L.attn.z
    before, after = before_after(model, ids, position, edits, start=first)
    t = target_id(lm, target, before)
    p_before, p_after = math.exp(float(before[t])), math.exp(float(after[t]))
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "mode": mode,
            "heads": [[int(layer), int(h)] for layer, h in pairs], "before": top_tokens(lm, before),
            "after": top_tokens(lm, after),
            "target": {"token": token_text(lm, t), "id": t, "prob_before": round_or_none(p_before),
                       "prob_after": round_or_none(p_after), "prob_change": round_or_none(p_after - p_before),
                       "logprob_change": round_or_none(float(after[t] - before[t]))}}
