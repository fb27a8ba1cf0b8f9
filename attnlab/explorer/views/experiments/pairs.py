"""What the intervention views share: the check that a model predicts tokens, a text (or a clean/corrupted pair)
prepared for an intervention, the read position and the followed token, the top-k list and JSON-ready grids.

Every experiment takes a Loaded text model that predicts tokens (a decoder: the next token; an encoder with an
MLM head: a masked word). Where the prediction is read: `position` (default: a decoder's last token, an MLM's
first [MASK]; an MLM position that is not [MASK] is masked). The token followed: `target` (a token id; default
the model's top prediction on the unchanged text). No state is kept and no lock taken: interventions live in the
request's own context (a ContextVar)."""

from __future__ import annotations

import math
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import a_an, check_range, encode, text_model, token_text
from attnlab.explorer.server.registry import Loaded

TOP = 5


def round_or_none(x: float, decimals: int = 6) -> float | None:
    return None if math.isnan(x) else round(float(x), decimals)


def grid_of(t: torch.Tensor) -> list[list[float | None]]:
    return [[round_or_none(v) for v in row] for row in t.tolist()]


def _lm_check(lm: Loaded):
    cfg = text_model(lm)
    model = lm.model
    if cfg.topology not in ("decoder", "encoder") or cfg.head != "lm" or getattr(model, "lm_head", None) is None:
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)} with head={cfg.head!r}; experiments need a model "
                         "that predicts tokens: a decoder language model or an encoder with a masked-LM head")
    return cfg


def prepare(lm: Loaded, text: str, position) -> tuple[torch.Tensor, list[str], int, str]:
    """-> (ids (1, seq), tokens, the read position, "next" | "masked"), an MLM's position masked."""
    cfg = _lm_check(lm)
    ids, tokens = encode(lm, text)
    if cfg.topology == "decoder":
        position = len(ids) - 1 if position is None else check_range("position", position, len(ids))
        return torch.tensor([ids]), tokens, position, "next"
    mask_id = lm.tokenizer.mask_id if lm.tokenizer is not None else None
    if mask_id is None:
        raise InputError(f"model {lm.id!r} has no tokenizer with a [MASK] token")
    if position is None:
        if mask_id not in ids:
            raise InputError("put [MASK] in the text where the model should guess a word, or choose a position")
        position = ids.index(mask_id)
    position = check_range("position", position, len(ids))
    ids = list(ids)
    ids[position] = mask_id
    return torch.tensor([ids]), tokens, position, "masked"


def prepare_pair(lm: Loaded, clean_text: str, corrupted_text: str, position):
    """`prepare` of a patching pair: -> (clean ids, clean tokens, corrupted ids, corrupted tokens, position, kind);
    the two must have the same number of tokens (a cell copies position p to position p)."""
    clean_ids, clean_tokens, position, kind = prepare(lm, clean_text, position)
    corrupted_ids, corrupted_tokens, _, _ = prepare(lm, corrupted_text, position)
    if clean_ids.shape != corrupted_ids.shape:
        raise InputError(f"the clean sentence has {clean_ids.shape[1]} tokens and the corrupted one "
                         f"{corrupted_ids.shape[1]}: patching copies position p to position p, so they must have "
                         "the same number of tokens")
    return clean_ids, clean_tokens, corrupted_ids, corrupted_tokens, position, kind


def top_tokens(lm: Loaded, logp: torch.Tensor, k: int = TOP) -> list[dict[str, Any]]:
    top = logp.topk(k)
    return [{"token": token_text(lm, int(i)), "id": int(i), "prob": round_or_none(math.exp(float(v)))}
            for v, i in zip(top.values, top.indices, strict=True)]


def target_id(lm: Loaded, target, logp: torch.Tensor) -> int:
    if target is None:
        return int(logp.argmax())
    return check_range("target token id", target, lm.model.config.vocab_size)
