"""Steering in the browser: a direction from two prompts, added with a strength alpha to the residual stream of
a decoder while it generates; the plain and the steered continuation of the same prompt side by side.

The direction is the difference of the residual stream entering block `layer` (`blocks.{layer}.resid_pre`, what
the logit lens calls "after layer `layer`") at the last tokens of the two prompts: what changes in the stream
when " love" is read instead of " hate". attnlab.steer adds alpha times it at every position, prompt and
generated tokens alike. Both continuations are greedy and run as ONE batch of two rows (row 1 steered, rows=[1]),
so the page pays one generation per slider value; at alpha 0 the two rows are the same.

The route computes under the server's `run` (a model slot, the queue limit) and stops between decoding steps
when the client leaves: the page aborts the previous request when the slider moves on.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import a_an, check_range, encode, text_model, token_texts
from attnlab.explorer.server.registry import Loaded
from attnlab.interventions import intervene, steer
from attnlab.recording import record

MAX_PROMPT_CHARS = 400
MAX_NEW_TOKENS = 40
MAX_ALPHA = 100.0
TOP = 5


def site(layer: int) -> str:
    """The residual-stream name the direction is read at and added to."""
    return f"blocks.{layer}.resid_pre"


def _ids(lm: Loaded, text: str, what: str) -> torch.Tensor:
    """(1, seq) token ids of `text` (the page's limits: MAX_PROMPT_CHARS, the model's position limit)."""
    if not text.strip():
        raise InputError(f"{what} is empty: type a few words")
    return torch.tensor([encode(lm, text)[0]])


def direction(lm: Loaded, positive: str, negative: str, layer: int) -> torch.Tensor:
    """(d_model,) residual stream entering block `layer` at the last token of `positive` minus the same for
    `negative`: the difference between reading one and the other, where the model holds it."""
    name = site(layer)
    with torch.no_grad():
        pos = record(lm.model, _ids(lm, positive, "the text to steer towards"), names=[name])[name][0, -1]
        neg = record(lm.model, _ids(lm, negative, "the text to steer away from"), names=[name])[name][0, -1]
    return (pos - neg).float()


def _top(lm: Loaded, logits: torch.Tensor) -> list[dict[str, Any]]:
    logp = logits.float().log_softmax(-1)
    top = logp.topk(TOP)
    texts = token_texts(lm, top.indices.tolist())
    return [{"token": t, "id": int(i), "prob": round(math.exp(float(v)), 6)}
            for t, v, i in zip(texts, top.values, top.indices, strict=True)]


def _continuation(lm: Loaded, ids: list[int]) -> dict[str, Any]:
    """The generated ids as the page shows them: the tokens one by one and the text they make."""
    tok = lm.tokenizer
    text = tok.decode(ids) if tok is not None else "".join(chr(i) if 32 <= i < 0x110000 else "?" for i in ids)
    return {"ids": ids, "tokens": token_texts(lm, ids) if ids else [], "text": text}


def steering(lm: Loaded, prompt: str, positive: str, negative: str, layer: int, alpha: float,
             tokens: int = 20, stop=None) -> dict[str, Any]:
    """Greedy continuations of `prompt`, plain and with alpha x direction(positive - negative) added to
    blocks.{layer}.resid_pre at every position; the next-token top-5 of both at the prompt's last token.

    `stop()` (optional) is called between decoding steps and raises to end the work early (the client left).
    """
    cfg = text_model(lm)
    if cfg.topology != "decoder":
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}: steering here generates text, which needs a "
                         "decoder (gpt-char, SmolLM2)")
    layer = check_range("layer", layer, cfg.n_layers)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise InputError(f"alpha={alpha!r}: allowed a number between -{MAX_ALPHA:g} and {MAX_ALPHA:g}")
    vector = direction(lm, positive, negative, layer)
    ids = _ids(lm, prompt, "the prompt")
    with torch.no_grad():  # how long the stream is where the vector is added: alpha x |v| reads against it
        stream = record(lm.model, ids, names=[site(layer)])[site(layer)][0].float().norm(dim=-1).median()
    gm = lm.device_model
    rows: list[list[int]] = [[], []]
    first = None
    with intervene(gm, steer(gm, site(layer), vector, alpha=float(alpha), rows=[1])):
        for step in gm.generate(ids.expand(2, -1).to(_device(gm)), max_new_tokens=tokens, stream=True,
                                keep_logits=True):
            if first is None:
                first = step.logits.cpu()  # (2, vocab) the next token after the prompt, plain and steered
            for r in range(2):
                rows[r].append(int(step.tokens[r]))  # a stopped row's pad tokens are cut by _trim
            if stop is not None:
                stop()
            if bool(step.finished.all()):
                break
    rows = [_trim(lm, r) for r in rows]
    differ = next((i for i, (a, b) in enumerate(zip(*rows, strict=False)) if a != b),
                  None if rows[0] == rows[1] else min(map(len, rows)))
    return {"model": lm.id, "layer": layer, "site": site(layer), "alpha": float(alpha), "tokens": tokens,
            "prompt_tokens": token_texts(lm, ids[0].tolist()),
            "direction": {"positive": positive, "negative": negative, "norm": round(float(vector.norm()), 6),
                          "stream_norm": round(float(stream), 6)},
            "plain": _continuation(lm, rows[0]), "steered": _continuation(lm, rows[1]),
            "next": {"plain": _top(lm, first[0]), "steered": _top(lm, first[1])}, "first_difference": differ}


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _trim(lm: Loaded, ids: list[int]) -> list[int]:
    """A row's new tokens up to and including its end-of-text token (the steps after it are padding)."""
    eos = lm.model.config.eos_token_id
    stops = set(eos) if isinstance(eos, (list, tuple)) else {eos} if eos is not None else set()
    for i, t in enumerate(ids):
        if t in stops:
            return ids[: i + 1]
    return ids
