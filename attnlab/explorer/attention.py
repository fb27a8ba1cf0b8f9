"""Attention views: one head of one layer with raw scores, weights, Q and K; every layer x head as thumbnails;
the causal mask placed before or after the softmax."""

from __future__ import annotations

from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.common import (
    MASKED,
    _check_index,
    _config,
    _default_part,
    _parts,
    _round,
    _special_flags,
    _text_model,
    _token_text,
    encode,
    raw_pieces,
    token_limit,
)
from attnlab.explorer.registry import Loaded
from attnlab.recording import record


# ---------------------------------------------------------------------------------------------- attention
def _record_text(lm: Loaded, ids: list[int], target_ids: list[int] | None, names: list[str],
                 head: int | None = None) -> dict[str, torch.Tensor]:
    """Record `names` for one text (and target), stopping the forward after the last of them: the later layers
    and the LM head are most of the time of an attention request on a large-vocabulary model."""
    kwargs = {"decoder_input_ids": torch.tensor([target_ids])} if _config(lm).topology == "encoder-decoder" else {}
    return record(lm.model, torch.tensor([ids]), names=names, head=head, stop_after=names[-1], **kwargs)


def _target_ids(lm: Loaded, ids: list[int], target: str | None) -> list[int]:
    """Decoder input for an encoder-decoder: the start token + the given target, or a greedy translation."""
    cfg = _config(lm)
    start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
    if target:
        tgt, _ = encode(lm, target, add_special_tokens=False)
        return [start] + tgt
    return greedy_translation(lm, ids)


def greedy_translation(lm: Loaded, ids: list[int], max_new: int = 16) -> list[int]:
    cfg, model = _config(lm), lm.model
    start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
    out = [start]
    limit = min(token_limit(lm), max_new + 1)
    with torch.no_grad():
        enc = model.encode(torch.tensor([ids]))
        while len(out) < limit:
            _, logits = model.decode(torch.tensor([out]), enc, last_only=True)
            nxt = int(logits[0, -1].argmax())
            out.append(nxt)
            if cfg.eos_token_id is not None and nxt == cfg.eos_token_id:
                break
    return out


def attention(lm: Loaded, text: str, layer: int = 0, head: int = 0, part: str | None = None,
              target: str | None = None) -> dict[str, Any]:
    """One head of one layer for `text`: raw scores Q.K*scale (+B), softmax weights, Q and K vectors.

    Only the requested layer and head are recorded, so the rest of the forward stays on the fast path.
    Masked entries (causal mask) come back as null raw scores and weight 0.
    """
    cfg = _text_model(lm)
    part = _default_part(cfg, part)
    prefix, n_layers, causal = _parts(cfg)[part]
    layer = _check_index("layer", layer, n_layers)
    head = _check_index("head", head, cfg.n_heads)
    ids, tokens = encode(lm, text)
    q_ids = k_ids = ids
    target_ids = None
    if cfg.topology == "encoder-decoder":
        target_ids = _target_ids(lm, ids, target)
        q_ids = target_ids if part in ("decoder", "cross") else ids
        k_ids = target_ids if part == "decoder" else ids
    name = prefix.format(l=layer)
    store = _record_text(lm, ids, target_ids, [f"{name}.q", f"{name}.k", f"{name}.raw_scores", f"{name}.weights"],
                         head=head)
    raw = store[f"{name}.raw_scores"][0, 0]  # (q, k)
    weights = store[f"{name}.weights"][0, 0]
    masked = raw <= MASKED
    raw_list = _round(raw.masked_fill(masked, 0.0))
    for i, j in masked.nonzero().tolist():
        raw_list[i][j] = None
    scale = cfg.attn_scale if cfg.attn_scale is not None else cfg.head_dim ** -0.5
    q_tokens = [_token_text(lm, i) for i in q_ids] if q_ids is not ids else tokens
    k_tokens = [_token_text(lm, i) for i in k_ids] if k_ids is not ids else tokens
    emb = lm.model.tokens.weight[torch.tensor(k_ids)][:, :64]
    illustration = lm.illustration or bool(cfg.extra.get("illustration"))
    dims = list(cfg.extra.get("dims", [])) if illustration else None
    return {"model": lm.id, "topology": cfg.topology, "part": part, "layer": layer, "head": head,
            "n_layers": n_layers, "n_heads": cfg.n_heads, "d_head": cfg.head_dim, "scale": scale,
            "causal": causal, "position": cfg.position,
            "q_tokens": q_tokens, "k_tokens": k_tokens, "q_ids": list(q_ids), "k_ids": list(k_ids),
            "q_pieces": raw_pieces(lm, q_ids), "k_pieces": raw_pieces(lm, k_ids),
            "q_special": _special_flags(lm, q_ids), "k_special": _special_flags(lm, k_ids),
            "raw_scores": raw_list, "weights": _round(weights),
            "q": _round(store[f"{name}.q"][0, 0], 5), "k": _round(store[f"{name}.k"][0, 0], 5),
            "embeddings": {"dims": dims, "width": cfg.d_model, "values": _round(emb.detach(), 4)},
            "head_name": cfg.extra.get("heads", [None] * cfg.n_heads)[head] if illustration else None}


def attention_grid(lm: Loaded, text: str, part: str | None = None, size: int = 24,
                   target: str | None = None) -> dict[str, Any]:
    """Every layer x head of one part as small thumbnails (average-pooled to at most size x size)."""
    cfg = _text_model(lm)
    part = _default_part(cfg, part)
    prefix, n_layers, _ = _parts(cfg)[part]
    ids, _ = encode(lm, text)
    target_ids = _target_ids(lm, ids, target) if cfg.topology == "encoder-decoder" else None
    names = [prefix.format(l=i) + ".weights" for i in range(n_layers)]
    store = _record_text(lm, ids, target_ids, names)
    grid = []
    for name in names:
        w = store[name][0]  # (heads, q, k)
        q, k = w.shape[-2:]
        pooled = torch.nn.functional.adaptive_avg_pool2d(w, (min(q, size), min(k, size)))
        peak = pooled.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-9)
        grid.append(_round(pooled / peak, 3))  # each thumbnail scaled to its own peak
    return {"model": lm.id, "part": part, "n_layers": n_layers, "n_heads": cfg.n_heads, "thumbnails": grid}


def mask_placement(lm: Loaded, text: str, layer: int = 0, head: int = 0) -> dict[str, Any]:
    """Causal mask applied before the softmax (correct) or after it (wrong): the second leaves rows summing < 1."""
    cfg = _text_model(lm)
    if cfg.topology != "decoder":
        raise InputError(f"model {lm.id!r} is a {cfg.topology}; the mask-placement lesson needs a causal decoder")
    layer = _check_index("layer", layer, cfg.n_layers)
    head = _check_index("head", head, cfg.n_heads)
    ids, tokens = encode(lm, text)
    name = f"blocks.{layer}.attn"
    store = _record_text(lm, ids, None, [f"{name}.q", f"{name}.k", f"{name}.weights"], head=head)
    q, k = store[f"{name}.q"][0, 0], store[f"{name}.k"][0, 0]  # (n, d_head)
    scale = cfg.attn_scale if cfg.attn_scale is not None else cfg.head_dim ** -0.5
    unmasked = (q @ k.T) * scale  # (n, n): what the scores are before any mask (position biases aside)
    n = len(ids)
    keep = torch.ones(n, n, dtype=torch.bool).tril()
    after = unmasked.softmax(-1) * keep  # softmax first, then zero the future: probability mass is lost
    before = store[f"{name}.weights"][0, 0]
    return {"model": lm.id, "tokens": tokens, "before": _round(before), "after": _round(after),
            "before_row_sums": _round(before.sum(-1)), "after_row_sums": _round(after.sum(-1))}
