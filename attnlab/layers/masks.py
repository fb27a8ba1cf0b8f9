"""Masks, and how they join the position bias into one additive term B of softmax(QK^T/sqrt(d_k) + B).

A mask says which (query, key) pairs may interact: padding hides keys that are not real tokens, the causal
(look-ahead) mask hides keys after the query. Hidden pairs get the most negative finite number rather than
-inf, so that a row with every key hidden (a padded query) gives a uniform row instead of NaN.
"""

from __future__ import annotations

import torch


def causal_mask(q_len: int, k_len: int, device=None, window: int | None = None) -> torch.Tensor:
    """(q, k) bool, True where query i may see key j.

    Bottom-right aligned: the last query is the last position, so with k_len > q_len (a KV cache holding
    k_len - q_len earlier tokens) query i sits at position i + k_len - q_len and sees keys up to there.
    A sliding `window` (Mistral) also hides keys `window` or more places back: query i sees the last `window`
    keys, itself included. Generation's cache keeps only the last `window` keys of such a layer
    (KVCache.for_model(bounded=True)); the mask hides those of the keys a forward reads that lie further back.
    """
    offset = k_len - q_len
    q = torch.arange(q_len, device=device)[:, None]
    k = torch.arange(k_len, device=device)[None, :]
    if window is not None:
        return (k <= q + offset) & (k > q + offset - window)
    return k <= q + offset


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """(batch, k) of 1/0 (1 = real token) -> (batch, 1, 1, k) bool, True where the key is real."""
    return attention_mask.bool()[:, None, None, :]


def attention_bias(
    *,
    q_len: int,
    k_len: int,
    causal: bool,
    attention_mask: torch.Tensor | None = None,
    position_bias: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float32,
    device=None,
    window: int | None = None,
) -> tuple[torch.Tensor | None, bool]:
    """Combine causal mask, padding and position bias into B: (batch|1, heads|1, q, k), or None.

    Returns (B, is_causal). When the only constraint is a square causal mask, B is None and is_causal is
    True, which lets scaled_dot_product_attention take its fused causal kernel. A sliding `window` (causal only)
    joins the mask once some query has keys beyond it (k_len > window); shorter, it hides nothing.
    """
    has_padding = attention_mask is not None and not bool(attention_mask.all())
    if window is not None and (not causal or k_len <= window):
        window = None
    if position_bias is None and not has_padding and window is None:
        if not causal:
            return None, False
        if q_len == k_len:
            return None, True
        if q_len == 1:  # one new token with a cache sees every cached key
            return None, False
    keep = None
    if causal:
        keep = causal_mask(q_len, k_len, device, window)[None, None]  # (1, 1, q, k)
    if has_padding:
        pad = padding_mask(attention_mask)
        keep = pad if keep is None else keep & pad
    bias = position_bias.to(dtype) if position_bias is not None else torch.zeros((), dtype=dtype, device=device)
    if keep is not None:
        bias = bias.expand(*torch.broadcast_shapes(bias.shape, keep.shape)) if bias.dim() else bias
        bias = torch.where(keep, bias, torch.finfo(dtype).min)
    while bias.dim() < 4:
        bias = bias.unsqueeze(0)
    return bias, False
