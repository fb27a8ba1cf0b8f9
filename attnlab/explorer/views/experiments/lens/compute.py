"""The logit lens: the top-k tokens at a position after the embeddings and after each block."""

from __future__ import annotations

import math
from typing import Any

from attnlab.errors import InputError
from attnlab.explorer.server.common import token_text
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.experiments.pairs import TOP, prepare, round_or_none, target_id, top_tokens
from attnlab.interventions import logit_lens


def logit_lens_top(lm: Loaded, text: str, *, position: int | None = None, k: int = TOP,
                   target: int | None = None) -> dict[str, Any]:
    """The top-k tokens at `position` after the embeddings (row 0) and after each block (row i), each through
    the final norm and the output head; the last row is the model's own prediction. "answer" tracks one token
    (`target`, default the model's final top-1) down the rows: its rank (1 = top) and probability at each."""
    ids, tokens, position, kind = prepare(lm, text, position)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
        raise InputError(f"k={k!r}: allowed 1..50")
    if kind == "next":  # a decoder's later positions cannot change this one: they are not run
        ids = ids[:, : position + 1]
    lens = logit_lens(lm.model, ids, positions=[position])[:, 0, 0]  # (layers + 1, vocab)
    rows = [{"layer": i - 1 if i else None, "after": "embeddings" if i == 0 else f"block {i - 1}",
             "top": top_tokens(lm, lens[i], k)} for i in range(lens.shape[0])]
    t = target_id(lm, target, lens[-1])
    ranks = (lens > lens[:, t : t + 1]).sum(dim=1) + 1  # (layers + 1,) 1 = the top token
    answer = {"token": token_text(lm, t), "id": t, "rank": [int(r) for r in ranks],
              "prob": [round_or_none(math.exp(float(v))) for v in lens[:, t]]}
    return {"model": lm.id, "tokens": tokens, "position": position, "predicts": kind, "rows": rows,
            "answer": answer}
