"""What the tour tells about one model and one sentence, computed, not written by hand: the tokens, the answer the
model gives (the top next token, or the masked word), and the head whose removal lowers that answer's probability
the most, with P(answer) before and after.

Why computed: a head picked by hand for one model raised P(answer) on another (65.6% -> 68.9% on SmolLM2), and
the tour then said nothing true. Why estimate first: an exact sweep is one forward per head (270 on SmolLM2,
seconds); attribution patching ranks every head from one forward and one backward, and the CHECKED heads (the
largest estimates) are then switched off exactly, so the head the tour names and its two probabilities are exact.
"""

from __future__ import annotations

import math
from typing import Any

from attnlab.errors import InputError
from attnlab.explorer.server.common import token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.experiments.attribution.compute import head_estimate
from attnlab.explorer.views.experiments.pairs import prepare, round_or_none
from attnlab.interventions import ablate_heads, before_after, clean_run

CHECKED = 4  # heads switched off exactly: the largest estimated drops
MAX_TOUR_TOKENS = 64


def story(lm: Loaded, text: str) -> dict[str, Any]:
    """The tour's numbers for `text` on `lm` (a model that predicts tokens): -> {"tokens", "answer": {token, id,
    prob}, "head": {layer, head, prob_before, prob_after} or None when no checked head lowers P(answer),
    "checked": [[layer, head, estimated drop, exact drop], ...]} (drops in log P, nats; layers and heads from 0)."""
    ids, tokens, position, kind = prepare(lm, text, None)
    if ids.shape[1] > MAX_TOUR_TOKENS:
        raise InputError(f"the tour's sentence has {ids.shape[1]} tokens; it takes at most {MAX_TOUR_TOKENS}")
    model = lm.model
    logp = clean_run(model, ids, position).logprobs[0]  # (vocab,)
    answer = int(logp.argmax())
    estimate = head_estimate(model, ids, position, answer, "zero", {})  # (layers, heads) estimated drop
    order = estimate.flatten().argsort(descending=True)[:CHECKED].tolist()
    heads = [divmod(i, estimate.shape[1]) for i in order]
    checked = []
    for layer, head in heads:
        edits = ablate_heads(model, [(layer, head)], rows=[1])
        pair = before_after(model, ids, position, edits, start=layer)  # (2, vocab): unchanged, head switched off
        checked.append([layer, head, float(estimate[layer, head]), float(pair[0, answer] - pair[1, answer]),
                        math.exp(float(pair[0, answer])), math.exp(float(pair[1, answer]))])
    best = max(checked, key=lambda c: c[3])
    chosen = None
    if best[3] > 0:
        chosen = {"layer": best[0], "head": best[1], "prob_before": round_or_none(best[4]),
                  "prob_after": round_or_none(best[5])}
    return {"model": lm.id, "text": text, "tokens": tokens, "position": position, "predicts": kind,
            "answer": {"token": token_text(lm, answer), "id": answer,
                       "prob": round_or_none(math.exp(float(logp[answer])))},
            "head": chosen,
            "checked": [[c[0], c[1], round_or_none(c[2]), round_or_none(c[3])] for c in checked]}

