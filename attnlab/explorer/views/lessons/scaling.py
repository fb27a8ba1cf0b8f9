"""Two lessons computed on the selected model: why the scores are divided by sqrt(d_k), and how a token's
vector becomes its query and key (x W_Q -> Q, x W_K -> K) before the dot product.

Both read one head of one layer through the recorder, exactly as the attention view does, and return plain
JSON-ready dicts (the server, the notebook and the tests call them).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server.common import (
    check_index,
    default_part,
    encode,
    head_site,
    parts_of,
    rounded,
    text_model,
    token_text,
)
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.views.attention.compute import record_text, target_token_ids


def _record_qk(lm: Loaded, text: str, layer: int, head: int, part: str | None, extra: tuple[str, ...] = ()):
    """Q and K of one head (after any rotary rotation) for `text`, plus any extra recorded names."""
    cfg, part, name, causal, layer, head = head_site(lm, part, layer, head)
    ids, tokens = encode(lm, text)
    target_ids = target_token_ids(lm, ids, None) if cfg.topology == "encoder-decoder" else None
    names = [*extra, f"{name}.q", f"{name}.k"]  # extras are recorded before q; k comes after q: stop there
    store = record_text(lm, ids, target_ids, names, head=head)
    q, k = store[f"{name}.q"][0, 0].double(), store[f"{name}.k"][0, 0].double()  # (n_q, d_head), (n_k, d_head)
    return cfg, part, layer, head, causal, ids, tokens, target_ids, q, k, store


def _sig(x) -> float:
    """7 significant digits: tiny random models have tiny variances that 6 decimals would flatten."""
    return float(f"{float(x):.7g}")


def _softmax_summary(row: torch.Tensor) -> dict[str, Any]:
    p = row.softmax(-1)
    entropy = float(-(p * p.clamp(min=1e-30).log()).sum())
    return {"weights": rounded(p), "max": round(float(p.max()), 6), "entropy": round(entropy, 6)}


def scaling_statistics(lm: Loaded, text: str, layer: int = 0, head: int = 0, part: str | None = None,
                       query: int | None = None, bins: int = 24) -> dict[str, Any]:
    """Why attention divides by sqrt(d_k), on this model's own Q and K.

    For one head: every visible raw score q.k before and after scaling (their mean, variance and a histogram
    on shared bins), and one query's softmax both ways (the unscaled one is peakier: larger max weight, lower
    entropy). Position biases (ALiBi, T5) are left out: this is the Q.K part alone. For independent q and k
    entries of variance s_q and s_k, var(q.k) = d_k s_q s_k, so dividing by sqrt(d_k) brings it back to s_q s_k.
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or not 2 <= bins <= 200:
        raise InputError(f"bins={bins!r}: allowed an integer from 2 to 200")
    cfg, part, layer, head, causal, ids, tokens, target_ids, q, k, _ = _record_qk(lm, text, layer, head, part)
    d_head = q.shape[-1]
    scale = cfg.attn_scale if cfg.attn_scale is not None else d_head ** -0.5
    unscaled = q @ k.T  # (n_q, n_k)
    visible = torch.ones_like(unscaled, dtype=torch.bool)
    if causal:
        visible = visible.tril(diagonal=unscaled.shape[1] - unscaled.shape[0])
    raw_vals, scaled_vals = unscaled[visible], unscaled[visible] * scale
    lo, hi = float(min(raw_vals.min(), scaled_vals.min())), float(max(raw_vals.max(), scaled_vals.max()))
    if hi <= lo:
        hi = lo + 1.0
    edges = torch.linspace(lo, hi, bins + 1, dtype=torch.float64)

    def hist(v: torch.Tensor) -> list[int]:
        idx = ((v - lo) / (hi - lo) * bins).floor().clamp(0, bins - 1).long()
        return torch.bincount(idx, minlength=bins).tolist()

    def stats(v: torch.Tensor) -> dict[str, float]:
        return {"mean": _sig(v.mean()), "variance": _sig(v.var(unbiased=False)), "std": _sig(v.std(unbiased=False)),
                "min": _sig(v.min()), "max": _sig(v.max())}

    n_q = unscaled.shape[0]
    if query is None:
        query = min(1, n_q - 1)  # the first token after a [CLS]-like start: usually a word
    query = check_index("query token", query, n_q)
    row_visible = visible[query]
    row_raw = unscaled[query][row_visible]
    target_tokens = [token_text(lm, i) for i in target_ids] if target_ids is not None else None
    q_tokens = target_tokens if part in ("decoder", "cross") else tokens
    k_tokens = target_tokens if part == "decoder" else tokens
    return {"model": lm.id, "part": part, "layer": layer, "head": head, "d_head": d_head, "scale": scale,
            "pairs": int(visible.sum()), "causal": causal,
            "q_variance": _sig(q.var(unbiased=False)), "k_variance": _sig(k.var(unbiased=False)),
            "unscaled": stats(raw_vals), "scaled": stats(scaled_vals),
            "bin_edges": rounded(edges), "hist_unscaled": hist(raw_vals), "hist_scaled": hist(scaled_vals),
            "query": query, "query_token": q_tokens[query],
            "keys": [k_tokens[j] for j in range(len(k_tokens)) if bool(row_visible[j])],
            "softmax_unscaled": _softmax_summary(row_raw), "softmax_scaled": _softmax_summary(row_raw * scale),
            "sqrt_d_head": round(math.sqrt(d_head), 6)}


def projection_steps(lm: Loaded, text: str, layer: int = 0, head: int = 0, query: int = 0, key: int = 0,
                     part: str | None = None) -> dict[str, Any]:
    """The maths of one score written out from the start: the layer's input vector x of the query token (after
    the block's norm when the model is pre-norm), Q = x W_Q (+ b) for this head, K = x W_K (+ b) for the key
    token (with grouped K/V heads, the K head this query head shares), the rotary rotation if the model uses
    one, then Q.K and the scaled score. Self-attention only (cross-attention reads K from the encoder)."""
    cfg = text_model(lm)
    part = default_part(cfg, part)
    if part == "cross":
        raise InputError("the step-by-step projection covers self-attention; pick the encoder or decoder part")
    prefix, n_layers, _ = parts_of(cfg)[part]
    layer = check_index("layer", layer, n_layers)
    block_name = prefix.format(l=layer).rsplit(".", 1)[0]  # blocks.3 / decoder.blocks.3
    stack = getattr(lm.model, part) if cfg.topology == "encoder-decoder" else lm.model
    block = stack.blocks[layer]
    cfg, part, layer, head, _, ids, tokens, target_ids, q_rec, k_rec, store = _record_qk(
        lm, text, layer, head, part, extra=(f"{block_name}.resid_pre",))
    query = check_index("query token", query, q_rec.shape[0])
    key = check_index("key token", key, k_rec.shape[0])
    attn = block.attn
    if not hasattr(attn, "qkv"):
        raise InputError(f"model {lm.id!r} keeps separate Q and KV projections here; no fused W_QKV to show")
    d_head, group = cfg.head_dim, cfg.n_heads // cfg.kv_heads
    kv_head = head // group
    with torch.no_grad():
        resid = store[f"{block_name}.resid_pre"][0].double()  # (n, d_model)
        x = block.norm1(resid.float()).double() if block.pre_norm else resid  # what W_Q actually multiplies
        weight = attn.qkv.weight.double()  # (q_width + 2 kv_width, d_model)
        bias = attn.qkv.bias.double() if attn.qkv.bias is not None else None
        rows_q = slice(head * d_head, (head + 1) * d_head)
        rows_k = slice(attn.q_width + kv_head * d_head, attn.q_width + (kv_head + 1) * d_head)
        w_q, w_k = weight[rows_q].T, weight[rows_k].T  # (d_model, d_head): x @ W
        q_proj = x[query] @ w_q + (bias[rows_q] if bias is not None else 0)
        k_proj = x[key] @ w_k + (bias[rows_k] if bias is not None else 0)
    scale = cfg.attn_scale if cfg.attn_scale is not None else d_head ** -0.5
    seq = target_ids if part == "decoder" else ids
    q_used, k_used = q_rec[query], k_rec[key]
    dot = float(q_used @ k_used)
    small = cfg.d_model * d_head <= 4096
    dims = list(cfg.extra.get("dims", [])) if cfg.extra.get("illustration") else None
    return {"model": lm.id, "part": part, "layer": layer, "head": head, "kv_head": kv_head, "kv_heads": cfg.kv_heads,
            "n_heads": cfg.n_heads, "d_model": cfg.d_model, "d_head": d_head, "pre_norm": bool(block.pre_norm),
            "position": cfg.position, "rotary": cfg.position == "rope", "dims": dims,
            "query": query, "key": key,
            "query_token": token_text(lm, seq[query]), "key_token": token_text(lm, seq[key]),
            "x_query": rounded(x[query], 5), "x_key": rounded(x[key], 5),
            "w_q": rounded(w_q, 5) if small else None, "w_k": rounded(w_k, 5) if small else None,
            "w_q_col0": rounded(w_q[:, 0], 5), "w_k_col0": rounded(w_k[:, 0], 5),
            "b_q": rounded(bias[rows_q], 5) if bias is not None else None,
            "b_k": rounded(bias[rows_k], 5) if bias is not None else None,
            "q_projected": rounded(q_proj, 5), "k_projected": rounded(k_proj, 5),
            "q": rounded(q_used, 5), "k": rounded(k_used, 5),
            "dot": round(dot, 6), "scale": scale, "scaled": round(dot * scale, 6)}
