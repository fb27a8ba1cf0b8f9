"""The toy view: the seed's toy (explorer/server/toy_model.py) with W_Q and W_K a learner edits, and the scores
they give, written out step by step. The toy's own names are re-exported here, so the view and its tests read one
module."""

from __future__ import annotations

import math

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.toy_model import (
    D_HEAD,
    DIMS,
    HEADS,
    SENTENCES,
    SPECIALS,
    WORDS,
    build,
    config,
    embedding_table,
    projections,
    tokenizer,
    vocabulary,
)

__all__ = [
    "DIMS", "D_HEAD", "HEADS", "SENTENCES", "SPECIALS", "WORDS", "build", "config", "embedding_table",
    "projections", "tokenizer", "vocabulary", "MAX_WEIGHT", "default_weights", "scores",
]

# ------------------------------------------------------------------------------------------ the editable toy
MAX_WEIGHT = 100.0  # an edited W_Q / W_K cell must lie in [-MAX_WEIGHT, MAX_WEIGHT]


def default_weights(head: int) -> tuple[list[list[float]], list[list[float]]]:
    """(W_Q, W_K) of `head` as nested lists (d_model=8 rows, d_head=4 columns): the page's editable grids."""
    w_q, w_k, _ = projections()
    return w_q[head].tolist(), w_k[head].tolist()


def _matrix(value, what: str) -> torch.Tensor:
    """A (8, 4) list of finite numbers in range -> float64 tensor; anything else is refused by name."""
    rows, cols = len(DIMS), D_HEAD
    ok = isinstance(value, (list, tuple)) and len(value) == rows and all(
        isinstance(r, (list, tuple)) and len(r) == cols for r in value)
    if not ok:
        raise InputError(f"{what} must be {rows} rows (one per dimension: {', '.join(DIMS)}) of {cols} numbers "
                         f"(d_head = {cols})")
    for i, r in enumerate(value):
        for j, x in enumerate(r):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) > MAX_WEIGHT:
                raise InputError(f"{what}[{DIMS[i]}][{j}] = {str(x)[:20]!r}: allowed a number from {-MAX_WEIGHT:g} "
                                 f"to {MAX_WEIGHT:g}")
    return torch.tensor(value, dtype=torch.float64)


def scores(text: str, w_q, w_k, query: int = 1) -> dict:
    """The toy's attention for one head with the learner's W_Q and W_K (8 x 4 each), written out step by step:
    x (the words' 8 named values) -> Q = x W_Q, K = x W_K -> raw scores Q K^T / sqrt(d_head) -> softmax rows.

    Why a separate function instead of the model: the page edits single cells and wants the answer at once, and
    the arithmetic is exactly what the toy's Encoder does for one head (a test holds the two together)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("text: type a few of the toy's words, e.g. 'the cat sat on the mat'")
    if len(text) > 400:
        raise InputError(f"text is {len(text)} characters; the toy takes at most 400")
    wq, wk = _matrix(w_q, "w_q"), _matrix(w_k, "w_k")
    tok = _tokenizer()
    ids = tok.encode(text, add_special_tokens=False)
    if len(ids) > 32:
        raise InputError(f"the text is {len(ids)} words; the toy takes at most 32")
    words = [tok.id_to_token(i) for i in ids]
    if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < len(ids):
        raise InputError(f"query {query!r}: allowed a word index 0..{len(ids) - 1}")
    x = embedding_table().double()[ids]  # (n, 8)
    q, k = x @ wq, x @ wk  # (n, d_head) each
    raw = q @ k.T / math.sqrt(D_HEAD)  # (n, n)
    weights = raw.softmax(-1)
    unknown = [w for w in words if w == "[UNK]"]
    return {"words": words, "dims": list(DIMS), "d_head": D_HEAD, "query": query, "x": _r6(x), "q": _r6(q),
            "k": _r6(k), "raw_scores": _r6(raw), "weights": _r6(weights),
            "unknown": f"{len(unknown)} word(s) not in the toy's vocabulary became [UNK] (a zero vector)"
            if unknown else None, "vocabulary": list(WORDS)}


def _r6(t: torch.Tensor) -> list:
    """A 2-d tensor as nested lists rounded to 6 places (what the page shows and the tests compare)."""
    return [[round(v, 6) for v in row] for row in t.tolist()]


_TOKENIZER = None


def _tokenizer():
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = tokenizer()
    return _TOKENIZER
