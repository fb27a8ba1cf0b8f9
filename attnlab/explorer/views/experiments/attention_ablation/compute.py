"""One head's attention weights beside the effect of knocking each weight out (seed 002: attention is not
explanation)."""

from __future__ import annotations

import math
from typing import Any

import torch

from attnlab.cache import KVCache
from attnlab.explorer.server.common import check_range, token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.experiments.pairs import prepare, round_or_none, target_id
from attnlab.interventions import clean_run, intervene, logprobs_at


class _KeyKnockout:
    """At one head's attention weights: row r sets the weight from query `position` (an index into this
    forward's queries) to key r to zero."""

    def __init__(self, head: int, position: int, keys: int):
        self.head, self.position, self.keys = head, position, keys

    def __call__(self, weights: torch.Tensor, name: str) -> torch.Tensor:  # (rows, heads, q, k)
        out = weights.clone()
        rows = torch.arange(self.keys)
        out[rows, self.head, self.position, rows] = 0
        return out


def _knocked(model, ids: torch.Tensor, name: str, head: int, position: int, keys: int, kind: str) -> torch.Tensor:
    """(keys, vocab) log-probabilities at `position`, row j with the head's weight from `position` to key j set
    to zero. In a decoder the knock-out changes nothing before `position`: each row runs that one token over the
    earlier tokens' cached keys and values (one forward of the text, not `keys` of them: SmolLM2, 20 tokens,
    0.9 s -> about 0.2 s of CPU)."""
    if kind != "next" or position == 0:
        with intervene(model, {name: _KeyKnockout(head, position, keys)}):
            return logprobs_at(model, ids.expand(keys, -1), position)
    prefix = KVCache.for_model(model, 1, position)
    with torch.no_grad():
        model(ids[:, :position], cache=prefix, last_only=True)
        cache = KVCache.for_model(model, keys, position + 1)
        for mine, theirs in zip(cache.layers, prefix.layers, strict=True):
            mine.kv.narrow(3, 0, position).copy_(theirs.kv)  # (2, 1 -> keys, kv_heads, position, d_head)
            mine.length = position
        with intervene(model, {name: _KeyKnockout(head, 0, keys)}):  # the one query of this forward
            logits = model(ids[:, position: position + 1].expand(keys, -1), cache=cache, last_only=True).logits
    return logits[:, -1].float().log_softmax(dim=-1)


def attention_vs_ablation(lm: Loaded, text: str, layer: int, head: int, *, position: int | None = None,
                          target: int | None = None) -> dict[str, Any]:
    """One head, one query position: per token j, the attention weight on j and the drop in log P(target) when
    that weight is set to zero (the other weights kept). Large weight with no effect, or the reverse, is the
    point: attention weights alone do not say what a head's reading does to the prediction."""
    ids, tokens, position, kind = prepare(lm, text, position)
    model = lm.model
    cfg = model.config
    layer = check_range("layer", layer, cfg.n_layers)
    head = check_range("head", head, cfg.n_heads)
    name = f"blocks.{layer}.attn.weights"
    run = clean_run(model, ids, position, names=[name])  # the prediction and the weights: one forward
    weights = run.recorded[name][0, head, position]  # (position + 1,) in a decoder (later keys weigh 0), else (seq,)
    clean = run.logprobs[0]
    t = target_id(lm, target, clean)
    keys = position + 1 if kind == "next" else ids.shape[1]  # a decoder's query sees keys 0..position
    knocked = _knocked(model, ids, name, head, position, keys, kind)[:, t]
    effect = (clean[t] - knocked).tolist()
    rows = [{"position": j, "token": tokens[j], "weight": round_or_none(float(weights[j]) if j < len(weights) else 0.0),
             "effect": round_or_none(effect[j]) if j < keys else None} for j in range(ids.shape[1])]
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "layer": layer,
            "head": head, "target": {"token": token_text(lm, t), "id": t,
                                     "prob": round_or_none(math.exp(float(clean[t])))}, "rows": rows}
