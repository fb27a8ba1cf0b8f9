"""Self-supervised views: BERT's masked-token corruption and predictions, a decoder's next-token predictions."""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from attnlab.data.collators import KEPT, MASKED, NOT_SELECTED, RANDOM, apply_mlm_rule
from attnlab.errors import InputError
from attnlab.explorer.server.common import (
    a_an,
    check_index,
    encode,
    special_flags,
    text_model,
    token_text,
)
from attnlab.explorer.server.registry import Loaded

ACTIONS = {MASKED: "mask", RANDOM: "random", KEPT: "keep"}  # the rule's kinds as mlm_predict's action names
# which of the explorer's own models have an MLM head (minilm is a sentence-embedding encoder: no head)
MLM_MODELS = ("smollm2-mlm (SmolLM2 read both ways), minilm-mlm (MiniLM with a trained MLM head), bert-mlm, or a "
              "BERT-family checkpoint with its MLM head named on the command line")


# ---------------------------------------------------------------------------------------- self-supervised
def _mlm_check(lm: Loaded):
    cfg = text_model(lm)
    if cfg.topology != "encoder" or cfg.head != "lm":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)} with head={cfg.head!r}; masked-token predictions "
                         f"need an encoder with an MLM head: {MLM_MODELS}")
    if lm.tokenizer is None or lm.tokenizer.mask_id is None:
        raise InputError(f"model {lm.id!r} has no tokenizer with a [MASK] token")
    return cfg


def mlm_draw(lm: Loaded, text: str, seed: int = 0, rate: float = 0.15) -> dict[str, Any]:
    """BERT's corruption as training applies it: attnlab.data.collators.apply_mlm_rule, the one function the
    bert-mlm recipe and MLMCollator use. Each real (non-special) token is picked with probability `rate`; of
    those, 80% become [MASK], 10% a random ordinary token, 10% stay unchanged. So that the view always shows
    something, a draw that picks nothing picks one real token uniformly and applies the 80/10/10 split to it.
    Every picked position is a loss position; draws come in position order."""
    cfg = _mlm_check(lm)
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise InputError(f"seed={seed!r}: allowed an integer from -2**63 to 2**63-1")
    ids, tokens = encode(lm, text)
    special = special_flags(lm, ids)
    candidates = [i for i, s in enumerate(special) if not s]
    if not candidates:
        raise InputError("the text has only special tokens; nothing to mask")
    gen = torch.Generator().manual_seed(int(seed))
    rule = functools.partial(apply_mlm_rule, vocab_size=cfg.vocab_size, mask_id=lm.tokenizer.mask_id,
                             special_ids=lm.tokenizer.special_ids, generator=gen)
    ids_t = torch.tensor([ids])  # (1, seq)
    try:
        out = rule(ids_t, attention_mask=torch.tensor([[not s for s in special]]), mlm_probability=rate)
    except InputError as exc:
        raise InputError(f"rate={rate!r}: {exc}") from None
    kinds, inputs = out["mask_rule"][0].tolist(), out["input_ids"][0].tolist()
    if all(k == NOT_SELECTED for k in kinds):
        i = candidates[int(torch.randint(len(candidates), (), generator=gen))]
        one = rule(ids_t[:, i: i + 1], mlm_probability=1.0)  # the same 80/10/10 split for the forced pick
        kinds[i], inputs[i] = int(one["mask_rule"][0, 0]), int(one["input_ids"][0, 0])
    draws = [{"position": i, "action": ACTIONS[k], "token_id": inputs[i], "token": token_text(lm, inputs[i])}
             for i, k in enumerate(kinds) if k != NOT_SELECTED]
    return {"model": lm.id, "tokens": tokens, "special": special, "seed": seed, "rate": rate, "draws": draws}


def mlm_predict(lm: Loaded, text: str, selections: list[dict[str, Any]] | list[int]) -> dict[str, Any]:
    """Run the MLM on the corrupted text; top-5 predictions and loss -log p(original) at each selected position.

    `selections`: positions (each replaced by [MASK]) or dicts {position, action: mask|random|keep, token_id}.
    """
    cfg = _mlm_check(lm)
    ids, tokens = encode(lm, text)
    if not isinstance(selections, list) or not selections:
        raise InputError("select at least one position to mask (a list of token positions)")
    corrupted = list(ids)
    rows = []
    seen = set()
    for sel in selections:
        if isinstance(sel, dict):
            pos, action, tid = sel.get("position"), sel.get("action", "mask"), sel.get("token_id")
        else:
            pos, action, tid = sel, "mask", None
        pos = check_index("position", pos, len(ids))
        if pos in seen:
            continue
        seen.add(pos)
        if action == "mask":
            tid = lm.tokenizer.mask_id
        elif action == "keep":
            tid = ids[pos]
        elif action == "random":
            tid = check_index("token_id", tid, cfg.vocab_size)
        else:
            raise InputError(f"action {action!r}: allowed mask, random, keep")
        corrupted[pos] = tid
        rows.append({"position": pos, "action": action, "input_token": token_text(lm, tid),
                     "original": tokens[pos], "original_id": ids[pos]})
    with torch.no_grad():
        logits = lm.model(torch.tensor([corrupted])).logits[0]  # (seq, vocab)
    logp = logits.log_softmax(-1)
    for row in rows:
        lp = logp[row["position"]]
        top = lp.topk(5)
        row["top5"] = [{"token": token_text(lm, int(i)), "id": int(i), "prob": round(math.exp(float(v)), 6)}
                       for v, i in zip(top.values, top.indices, strict=False)]
        row["loss"] = round(-float(lp[row["original_id"]]), 6)
    loss = sum(r["loss"] for r in rows) / len(rows)
    return {"model": lm.id, "tokens": tokens, "corrupted": [token_text(lm, i) for i in corrupted],
            "special": special_flags(lm, ids), "rows": rows, "loss": round(loss, 6)}


def causal_predictions(lm: Loaded, text: str) -> dict[str, Any]:
    """Every position's next-token prediction (top 5) and its loss -log p(actual next token)."""
    cfg = text_model(lm)
    if cfg.topology != "decoder":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; next-token predictions need a decoder")
    ids, tokens = encode(lm, text)
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0]
    logp = logits.log_softmax(-1)
    rows = []
    for i in range(len(ids)):
        top = logp[i].topk(5)
        row = {"position": i, "token": tokens[i],
               "top5": [{"token": token_text(lm, int(t)), "id": int(t), "prob": round(math.exp(float(v)), 6)}
                        for v, t in zip(top.values, top.indices, strict=False)]}
        if i + 1 < len(ids):
            row["next"] = tokens[i + 1]
            row["loss"] = round(-float(logp[i, ids[i + 1]]), 6)
        rows.append(row)
    losses = [r["loss"] for r in rows if "loss" in r]
    return {"model": lm.id, "tokens": tokens, "rows": rows,
            "loss": round(sum(losses) / len(losses), 6) if losses else None}
